#pragma once
// The timers of a NetworkClock (node/transport/simulated_network.h): tasks by time and, at equal
// times, by the order they were added, any of them cancellable by its id. Shared by the
// real-time clock of the simulated network and the simulator's virtual clock (sim/scheduling.h).
// Not thread-safe: its clock guards it.

#include <functional>
#include <map>
#include <utility>

#include "node/transport/simulated_network.h"

namespace meshlearn::node {

class TimerQueue {
 public:
  using TimerId = NetworkClock::TimerId;
  using TimePoint = std::chrono::steady_clock::time_point;

  // Adds `task` at `at`, after the tasks already added for that time; its id for Cancel.
  TimerId Add(TimePoint at, std::function<void()> task) {
    const TimerId id{at, next_sequence_++};
    tasks_.emplace(std::make_pair(id.at, id.sequence), std::move(task));
    return id;
  }
  // Forgets task `id` if it is still queued (no-op otherwise).
  void Cancel(const TimerId& id) { tasks_.erase(std::make_pair(id.at, id.sequence)); }
  // Whether no task is queued.
  bool empty() const { return tasks_.empty(); }
  // The time of the first task; only when not empty().
  TimePoint next_time() const { return tasks_.begin()->first.first; }
  // Removes the first task and returns it; only when not empty().
  std::function<void()> PopNext() {
    std::function<void()> task = std::move(tasks_.begin()->second);
    tasks_.erase(tasks_.begin());
    return task;
  }

 private:
  std::map<std::pair<TimePoint, uint64_t>, std::function<void()>> tasks_;
  uint64_t next_sequence_ = 0;
};

}  // namespace meshlearn::node
