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
  enum class Kind {
    kReplace,  ///< a regular or new file: a temporary file renamed over `path`
    kDirect,   ///< a character device or FIFO (/dev/null, a named pipe): written into in place
    kStdout,   ///< the file stdout already writes to (/dev/stdout, /dev/fd/1): written to fd 1
    kStderr,   ///< the same for stderr (/dev/stderr, /dev/fd/2): fd 2
  };
  Kind kind = Kind::kReplace;
  /// kReplace: the file replaced, the path with symbolic links followed (so that a link keeps
  /// pointing at the new content); kDirect: the path as given (the kernel resolves it on open).
  std::string path;
  /// kReplace of an existing file: its permission bits (rwx only), which the replacement keeps.
  bool keep_mode = false;
  mode_t mode = 0;
};

/// Resolves `path` for writing. A symbolic link (also a chain of them, or one naming a file that
/// does not exist yet) is followed to its final target, except where the kernel's
/// protected_symlinks rule would refuse to follow it: a link in a sticky world-writable folder
/// (such as /tmp) owned by neither the current user nor the folder's owner. Throws
/// decodebench::Error (exit 2) for such a link, links that loop or nest more than 40 deep, a
/// block device or a socket.
OutputTarget resolve_output(const std::string& path);

/// Whether `path` writes to the process's stdout: "-", or a name of the file stdout already writes
/// to (/dev/stdout, /dev/fd/1; not a device other than a terminal, such as /dev/null, which is
/// opened anew). Commands then send their report to stderr, as with "-".
bool writes_to_stdout(const std::string& path);

/// Creates a new file named `stem` + ".<pid>.<n>" for the first n in 0..99 whose name is free:
/// exclusively and never through a link (O_CREAT | O_EXCL | O_NOFOLLOW), mode 0666 less the
/// umask, so that a file left behind by a crashed run or placed there by someone else is never
/// reused. Returns the descriptor and sets `*name`; returns -1 with errno set when it cannot.
int create_fresh_file(const std::string& stem, std::string* name);

/// Error for a failed write of `path` with errno `err`: exit 3 (resources) when the disk is full
/// (ENOSPC) or the quota is used up (EDQUOT), exit 1 otherwise.
[[nodiscard]] Error write_error(const std::string& path, int err);

/// An output file being written (resolve_output). A regular or new file is written to a fresh
/// temporary file in the target's folder (created exclusively, never through a link) that
/// commit() renames over it: POSIX rename is atomic, so readers see the old file or the whole
/// new one. Anything else is written in place. The destructor removes an uncommitted temporary
/// file, and so does SIGINT, SIGTERM or SIGHUP while it exists (where the signal's action was the
/// default: the handler removes every such file, then the signal ends the process as before).
/// `flag` names the option in messages ("--json"). Throws decodebench::Error (exit 2) when the file
/// cannot be created, or is a FIFO that no process reads (opening it would wait forever).
class OutputFile {
 public:
  OutputFile(const std::string& path, const std::string& flag);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  /// The stream to write to (owned unless it is stdout or stderr; closed by commit() or the
  /// destructor).
  [[nodiscard]] std::FILE* file() const { return file_; }
  /// The path being written (the temporary file, or the target when written in place), for
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
  int temp_slot_ = -1;  ///< the temporary file's entry for the signal handler; -1: none
};

/// Flushes `f` (stdout or stderr, where a report was printed). Never throws, so that a lost
/// report does not stop a result file from being written: a failure on stdout is remembered
/// with its errno for stdout_ok(); stderr carries diagnostics and its failures are ignored.
void flush_output(std::FILE* f);

/// Flushes stdout and reports whether every write to it succeeded since the start (C stdio's
/// error flag; std::cout shares that buffer while synchronized with stdio, the default). On
/// failure sets `*err` to the errno that flush_output() remembered or of this flush; when
/// neither is known (the failed write's errno is gone) leaves `*err` as it was.
bool stdout_ok(int* err);

}  // namespace decodebench
