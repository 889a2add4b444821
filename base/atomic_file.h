#pragma once
// Whole-file reads and crash-safe whole-file writes, shared by shard files, checkpoints and
// outputs. DESIGN.md "Reliability": checkpoints are written atomically (temp file, fsync,
// rename).

#include <string>
#include <string_view>

#include "base/status.h"

namespace meshlearn {

// Replaces the file at `path` with `bytes` so that a crash leaves either the old or the new
// contents, never a mix: writes "<path>.tmp", fsyncs it, renames it over `path` and fsyncs the
// folder. Creates missing parent folders. kIoError naming the file, or the folder that could not
// be created, with the system's reason on any failure (the temporary file is then removed).
Status WriteFileAtomically(const std::string& path, std::string_view bytes);

// Returns the whole contents of the file at `path`. kNotFound when it does not exist (or is not
// a regular file), kIoError when it cannot be read.
Result<std::string> ReadWholeFile(const std::string& path);

}  // namespace meshlearn
