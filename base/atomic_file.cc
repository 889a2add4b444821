#include "base/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace meshlearn {

Status WriteFileAtomically(const std::string& path, std::string_view bytes) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  // The folder's own failure (read-only, permission denied) is the cause a user can act on; the
  // file's "No such file or directory" that would follow is not.
  if (ec) return Status::IoError(parent.string() + ": cannot create the folder: " + ec.message());
  const std::string temp = path + ".tmp";
  FILE* f = std::fopen(temp.c_str(), "wb");
  if (f == nullptr) return Status::IoError(temp + ": cannot create: " + std::strerror(errno));
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size() &&
                       std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  const int saved_errno = errno;
  if (std::fclose(f) != 0 || !written) {
    std::remove(temp.c_str());
    return Status::IoError(temp + ": write failed: " + std::strerror(saved_errno));
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const int rename_errno = errno;
    std::remove(temp.c_str());
    return Status::IoError(path + ": rename failed: " + std::strerror(rename_errno));
  }
  // Make the rename itself durable.
  const int dir = open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    fsync(dir);
    close(dir);
  }
  return Status::Ok();
}

Result<std::string> ReadWholeFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return Status::NotFound(path + ": no such file");
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return Status::IoError(path + ": cannot open: " + std::strerror(errno));
  std::string bytes;
  char chunk[1 << 16];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof(chunk), f)) > 0) bytes.append(chunk, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return Status::IoError(path + ": read failed");
  return bytes;
}

}  // namespace meshlearn
