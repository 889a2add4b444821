#pragma once
// FileLock: an exclusive lock on a lock file, held while the object lives, that says which
// process holds it. A node locks its output folder ("node.lock") and meshlearn-launch its run
// folder ("launch.lock"), so that two writers never mix their files and the launcher can tell a
// node restarted by hand from a dead one.

#include <sys/types.h>

#include <string>
#include <utility>

#include "base/status.h"

namespace meshlearn {

// An exclusive lock on a file. Move-only; released when destroyed (or when the process ends,
// however it ends). Rationale: an open file description's lock (F_OFD_SETLK), unlike a POSIX
// record lock, is not dropped when the process closes another descriptor of the file, and two
// FileLocks of one process exclude each other (nodes run as threads of the launcher).
class FileLock {
 public:
  // Creates `path` if missing, locks it and, when `record_pid`, writes this process's id into it
  // (else RecordPid() does, later). kUnavailable when it is held already (by another process or
  // another FileLock of this one), with "by process N" in the message when the holder recorded
  // its id; kIoError naming the file when it cannot be created, locked (a file system without
  // locks) or written, with the system's reason.
  static Result<FileLock> Acquire(const std::string& path, bool record_pid = true);

  // Writes this process's id into the locked file, replacing what it held.
  Status RecordPid();

  // The process holding the lock on `path`: its id, -1 when it is held but the id unreadable, 0
  // when nobody holds it or the file does not exist. Never takes the lock itself.
  static pid_t Holder(const std::string& path);

  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

 private:
  FileLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

}  // namespace meshlearn
