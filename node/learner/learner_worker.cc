#include "node/learner/learner_worker.h"

namespace meshlearn::node {

LearnerWorker::LearnerWorker(Learner& learner, std::function<void(LearnerResult)> on_done)
    : learner_(learner), on_done_(std::move(on_done)), thread_([this] { Loop(); }) {}

LearnerWorker::~LearnerWorker() { Stop(); }

void LearnerWorker::Enqueue(LearnerJob job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
}

void LearnerWorker::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    exit_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void LearnerWorker::Loop() {
  for (;;) {
    LearnerJob job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return !jobs_.empty() || exit_; });
      if (exit_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    on_done_(RunLearnerJob(learner_, std::move(job)));
  }
}

}  // namespace meshlearn::node
