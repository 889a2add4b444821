#pragma once
// The worker thread of a node: it runs the learner's jobs one at a time, in the order they were
// queued, so that the event thread (node/host/node.h) never waits for training and serving never
// waits for the learner.

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "node/logic/learner.h"
#include "node/logic/learner_jobs.h"

namespace meshlearn::node {

// Runs learner jobs on a thread of its own. Thread-safe.
class LearnerWorker {
 public:
  // A worker for `learner`, which it must outlive; `on_done` receives every result on the worker
  // thread and must not block.
  LearnerWorker(Learner& learner, std::function<void(LearnerResult)> on_done);
  // Stops the thread: a job under way finishes (its result is still handed over); queued jobs
  // are dropped.
  ~LearnerWorker();
  LearnerWorker(const LearnerWorker&) = delete;
  LearnerWorker& operator=(const LearnerWorker&) = delete;

  // Queues `job` after the jobs already queued.
  void Enqueue(LearnerJob job);
  // Stops the thread as the destructor does; returns once it has stopped.
  void Stop();

 private:
  void Loop();

  Learner& learner_;
  std::function<void(LearnerResult)> on_done_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<LearnerJob> jobs_;  // guarded by mutex_
  bool exit_ = false;            // guarded by mutex_
  std::thread thread_;           // last: starts once everything above exists
};

}  // namespace meshlearn::node
