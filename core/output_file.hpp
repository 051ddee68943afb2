// Writing an output file (result JSON, text dumps, GGUF) so that a failed write never leaves a
// half-written file behind and never replaces something that is not a regular file.
#pragma once

#include <sys/types.h>

#include <cstdio>
#include <string>

#include "core/error.hpp"

namespace decodebench {

/// Where the bytes for an output path go (resolve_output).
struct OutputTarget {
  /// The file written or replaced: the path with symbolic links followed to what they name (so
  /// that a link keeps pointing at the new content instead of being replaced by it).
  std::string path;
  /// True for an existing node that is not a regular file (a device such as /dev/null, a FIFO, a
  /// terminal, /dev/stdout): written straight into, as renaming over it would replace the node.
  bool direct = false;
  /// True for an existing regular file: its replacement keeps its permission bits (`mode`).
  bool keep_mode = false;
  mode_t mode = 0;
};

/// Resolves `path` for writing. A symbolic link (also a chain of them, or one naming a file that
/// does not exist yet) is followed to its final target. Throws decodebench::Error (exit 2) when
/// the links loop or are more than 40 deep.
OutputTarget resolve_output(const std::string& path);

/// Error for a failed write of `path` with errno `err`: exit 3 (resources) when the disk is full
/// (ENOSPC) or the quota is used up (EDQUOT), exit 1 otherwise.
[[nodiscard]] Error write_error(const std::string& path, int err);

/// An output file being written. A regular or new file is written to a temporary file in the
/// target's folder that commit() renames over it (POSIX rename is atomic: readers see the old
/// file or the whole new one); a device, FIFO or terminal is written directly. The destructor
/// removes an uncommitted temporary file. `flag` names the option in messages ("--json").
/// Throws decodebench::Error (exit 2) when the file cannot be created.
class OutputFile {
 public:
  OutputFile(const std::string& path, const std::string& flag);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  /// The stream to write to (owned; closed by commit() or the destructor).
  [[nodiscard]] std::FILE* file() const { return file_; }
  /// The path being written (the temporary file, or the target when written directly), for
  /// messages.
  [[nodiscard]] const std::string& writing() const { return writing_; }
  /// Writes `bytes` bytes. Throws write_error().
  void write(const void* data, size_t bytes);
  /// Flushes and closes the file, gives a replacement the old file's permission bits and renames
  /// it over the target. Throws write_error() for a failed flush or close, decodebench::Error
  /// (exit 2) for a failed rename.
  void commit();

 private:
  OutputTarget target_;
  std::string flag_;
  std::string writing_;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
};

/// Flushes stdout and reports whether every write to it succeeded since the start (C stdio's
/// error flag; std::cout shares that buffer while synchronized with stdio, the default). When
/// this flush fails, sets `*err` to its errno; a failure of an earlier write leaves `*err` as it
/// was (its errno is gone).
bool stdout_ok(int* err);

}  // namespace decodebench
