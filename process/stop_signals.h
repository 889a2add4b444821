#pragma once
// SIGINT and SIGTERM as a request to stop, for the meshlearn executables.
//
// Rationale: a library may start threads before main() runs (OpenBLAS's pthread build starts its
// pool when it is loaded, and Debian makes it the system BLAS when python3-numpy comes in). A
// signal blocked in main's threads only is then delivered to such a thread, whose default action
// ends the process: a node killed by SIGTERM instead of saying Goodbye. A handler installed with
// sigaction runs on whichever thread receives the signal; it only writes the signal's number to
// a pipe, and a thread of this class reads it and calls back.

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "base/status.h"

namespace meshlearn {

// Calls `on_stop` on a thread of its own each time the process receives SIGINT or SIGTERM, from
// Watch() until it is destroyed, which leaves both signals ignored: a process that is stopping
// is not killed by a second one (an engine and a rank script may both pass a stop on), which
// would turn its clean exit into a death by signal. One instance at a time per process
// (kUnavailable for a second one, or when the pipe cannot be made).
class StopSignals {
 public:
  static Result<std::unique_ptr<StopSignals>> Watch(std::function<void()> on_stop);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Blocks until the first SIGINT or SIGTERM since Watch() was handled (its on_stop returned);
  // returns at once if one was.
  void Wait();

 private:
  StopSignals(std::function<void()> on_stop, int read_fd, int write_fd);
  void Run();

  std::function<void()> on_stop_;
  int read_fd_;
  int write_fd_;
  std::mutex mutex_;
  std::condition_variable signalled_;
  bool stopped_ = false;  // a signal came
  std::thread thread_;
};

}  // namespace meshlearn
