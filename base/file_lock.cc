#include "base/file_lock.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>

#include "base/atomic_file.h"
#include "base/number_text.h"

namespace meshlearn {
namespace {

// A write lock over the whole file, for F_OFD_SETLK and F_OFD_GETLK.
struct flock WholeFile() {
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  return lock;
}

}  // namespace

Result<FileLock> FileLock::Acquire(const std::string& path, bool record_pid) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IoError(path + ": cannot create: " + std::strerror(errno));
  struct flock whole = WholeFile();
  if (::fcntl(fd, F_OFD_SETLK, &whole) != 0) {
    const int error = errno;
    ::close(fd);
    if (error != EAGAIN && error != EACCES) {
      return Status::IoError(path + ": cannot lock: " + std::strerror(error));
    }
    pid_t holder = Holder(path);
    return Status::Unavailable(path + " is locked" +
                               (holder > 0 ? " by process " + std::to_string(holder)
                                           : std::string(" by another process")));
  }
  FileLock lock(fd, path);
  if (record_pid) MESHLEARN_RETURN_IF_ERROR(lock.RecordPid());
  return lock;
}

Status FileLock::RecordPid() {
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
    return Status::IoError(path_ + ": cannot write: " + std::strerror(errno));
  }
  return Status::Ok();
}

pid_t FileLock::Holder(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct flock lock = WholeFile();
  bool held = ::fcntl(fd, F_OFD_GETLK, &lock) == 0 && lock.l_type != F_UNLCK;
  ::close(fd);
  if (!held) return 0;
  // The file holds RecordPid's "<pid>\n": one whole number >= 1, or it is unreadable.
  auto text = ReadWholeFile(path);
  std::optional<pid_t> pid =
      text.ok() ? NumberFromText<pid_t>(*text, {.padded = true, .min = 1}) : std::nullopt;
  return pid ? *pid : -1;
}

FileLock::FileLock(FileLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace meshlearn
