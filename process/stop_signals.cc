#include "process/stop_signals.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>

namespace meshlearn {
namespace {

constexpr int kStopSignals[] = {SIGINT, SIGTERM};
constexpr char kEndWatching = 0;  // written by the destructor: the watcher thread ends

// The pipe the handler writes to; -1 while no StopSignals watches.
std::atomic<int> g_signal_pipe{-1};

// Async-signal-safe: one write of the signal's number; a full pipe drops it (a stop is pending).
void OnStopSignal(int signal) {
  const int saved_errno = errno;
  const char byte = static_cast<char>(signal);
  const int fd = g_signal_pipe.load();
  if (fd >= 0) (void)!::write(fd, &byte, 1);
  errno = saved_errno;
}

}  // namespace

Result<std::unique_ptr<StopSignals>> StopSignals::Watch(std::function<void()> on_stop) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    return Status::Unavailable(std::string("stop signals: cannot make a pipe: ") +
                               std::strerror(errno));
  }
  // The reading end blocks: the watcher thread waits on it.
  ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) & ~O_NONBLOCK);
  int expected = -1;
  if (!g_signal_pipe.compare_exchange_strong(expected, fds[1])) {
    ::close(fds[0]);
    ::close(fds[1]);
    return Status::Unavailable("stop signals: another StopSignals already watches this process");
  }
  std::unique_ptr<StopSignals> watcher(new StopSignals(std::move(on_stop), fds[0], fds[1]));
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signal : kStopSignals) ::sigaction(signal, &action, nullptr);
  return watcher;
}

StopSignals::StopSignals(std::function<void()> on_stop, int read_fd, int write_fd)
    : on_stop_(std::move(on_stop)),
      read_fd_(read_fd),
      write_fd_(write_fd),
      thread_([this] { Run(); }) {}

StopSignals::~StopSignals() {
  for (int signal : kStopSignals) std::signal(signal, SIG_IGN);
  g_signal_pipe.store(-1);
  (void)!::write(write_fd_, &kEndWatching, 1);
  thread_.join();
  ::close(read_fd_);
  ::close(write_fd_);
}

void StopSignals::Wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  signalled_.wait(lock, [this] { return stopped_; });
}

void StopSignals::Run() {
  char byte = 0;
  while (true) {
    ssize_t n = ::read(read_fd_, &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n != 1 || byte == kEndWatching) return;
    if (on_stop_) on_stop_();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopped_ = true;
    }
    signalled_.notify_all();
  }
}

}  // namespace meshlearn
