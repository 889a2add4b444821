#pragma once
// The simulation's scheduling (sim/simulation.h): its virtual clock and event queue, and the pool
// of worker threads its learner jobs run on.

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "node/logic/learner_jobs.h"
#include "node/transport/simulated_network.h"
#include "node/transport/timer_queue.h"

namespace meshlearn::sim {

// A fixed set of threads running learner jobs in the order they were queued.
class WorkerPool {
 public:
  explicit WorkerPool(int threads) {
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { Loop(); });
  }
  ~WorkerPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }
  // Queues `job`; its result arrives in the returned future.
  std::shared_future<node::LearnerResult> Submit(std::function<node::LearnerResult()> job) {
    auto task = std::make_shared<std::packaged_task<node::LearnerResult()>>(std::move(job));
    std::shared_future<node::LearnerResult> result = task->get_future().share();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.push_back([task] { (*task)(); });
    }
    wake_.notify_one();
    return result;
  }

 private:
  void Loop() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) return;  // stopping, with nothing left to run
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

// The simulation's clock and event queue: tasks run in order of their time and, at equal times,
// of their creation, all on the simulation thread.
class VirtualClock final : public node::NetworkClock {
 public:
  using TimePoint = node::TimePoint;
  TimePoint Now() const override { return now_; }
  TimerId At(TimePoint at, std::function<void()> task) override {
    return queue_.Add(std::max(at, now_), std::move(task));
  }
  void Cancel(const TimerId& id) override { queue_.Cancel(id); }
  void Enter(std::function<void()> task, bool) override { task(); }  // one thread: at once

  // Sets the time (a resumed simulation's start); only before the first task.
  void StartAt(TimePoint now) { now_ = now; }

  // Runs the next task; false when there is none.
  bool RunNext() {
    if (queue_.empty()) return false;
    now_ = queue_.next_time();
    queue_.PopNext()();
    return true;
  }

 private:
  node::TimerQueue queue_;
  TimePoint now_{};
};

}  // namespace meshlearn::sim
