// process/stop_signals.h: SIGTERM asks to stop, whichever thread the kernel hands it to.
#include "process/stop_signals.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace meshlearn {
namespace {

// A library thread started before main() (OpenBLAS's pool) does not block SIGTERM while main's
// threads do: the signal goes to it, reaches the callback, and the process lives on.
TEST(StopSignals, ASigtermToAThreadThatDoesNotBlockItReachesTheCallback) {
  std::atomic<int> calls{0};
  auto watcher = StopSignals::Watch([&] { ++calls; });
  ASSERT_TRUE(watcher.ok()) << watcher.status().ToString();
  EXPECT_EQ(StopSignals::Watch(nullptr).status().code(), ErrorCode::kUnavailable)
      << "one watcher per process";

  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &term, nullptr), 0);
  std::atomic<bool> done{false};
  std::thread bystander([&] {
    pthread_sigmask(SIG_UNBLOCK, &term, nullptr);
    while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  ASSERT_EQ(::kill(::getpid(), SIGTERM), 0);
  (*watcher)->Wait();
  EXPECT_EQ(calls.load(), 1);
  done = true;
  bystander.join();
  pthread_sigmask(SIG_UNBLOCK, &term, nullptr);

  watcher->reset();  // a late SIGTERM is ignored now, and a new watcher may start
  ASSERT_EQ(::kill(::getpid(), SIGTERM), 0);
  auto again = StopSignals::Watch(nullptr);
  EXPECT_TRUE(again.ok()) << again.status().ToString();
}

}  // namespace
}  // namespace meshlearn
