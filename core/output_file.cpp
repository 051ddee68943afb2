#include "core/output_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace decodebench {

OutputTarget resolve_output(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p(path);
  // Follow links one at a time (a dangling link names the file to create); 40 as Linux's
  // MAXSYMLINKS.
  for (int depth = 0;; ++depth) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec))) break;
    if (depth == 40) {
      throw usage_error("'" + path + "': symbolic links loop or are nested too deep");
    }
    const fs::path next = fs::read_symlink(p, ec);
    if (ec) throw usage_error("'" + path + "': cannot read the link: " + ec.message());
    p = next.is_absolute() ? next : p.parent_path() / next;
  }
  OutputTarget t;
  t.path = p.string();
  struct stat st {};
  if (::stat(t.path.c_str(), &st) == 0) {
    t.direct = !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
    t.keep_mode = S_ISREG(st.st_mode);
    t.mode = st.st_mode & 07777;
  }
  return t;
}

Error write_error(const std::string& path, int err) {
  const std::string message = "cannot write '" + path + "': " + std::strerror(err);
  return err == ENOSPC || err == EDQUOT ? resource_error(message) : runtime_error(message);
}

OutputFile::OutputFile(const std::string& path, const std::string& flag)
    : target_(resolve_output(path)), flag_(flag) {
  writing_ = target_.direct ? target_.path : target_.path + ".tmp." + std::to_string(::getpid());
  file_ = std::fopen(writing_.c_str(), "wb");
  if (file_ == nullptr) {
    throw usage_error(flag_ + ": cannot create '" + writing_ + "': " + std::strerror(errno));
  }
}

OutputFile::~OutputFile() {
  if (file_ != nullptr) std::fclose(file_);
  if (!committed_ && !target_.direct) std::remove(writing_.c_str());
}

void OutputFile::write(const void* data, size_t bytes) {
  if (bytes != 0 && std::fwrite(data, 1, bytes, file_) != bytes) throw write_error(writing_, errno);
}

void OutputFile::commit() {
  if (std::fflush(file_) != 0 || std::ferror(file_)) throw write_error(writing_, errno);
  if (target_.keep_mode && ::fchmod(::fileno(file_), target_.mode) != 0) {
    throw write_error(writing_, errno);
  }
  const int closed = std::fclose(file_);
  file_ = nullptr;
  if (closed != 0) throw write_error(writing_, errno);
  if (!target_.direct && std::rename(writing_.c_str(), target_.path.c_str()) != 0) {
    throw usage_error(flag_ + ": cannot rename '" + writing_ + "' to '" + target_.path +
                      "': " + std::strerror(errno));
  }
  committed_ = true;
}

bool stdout_ok(int* err) {
  errno = 0;
  if (std::fflush(stdout) != 0) {
    *err = errno != 0 ? errno : EIO;
    return false;
  }
  if (std::ferror(stdout)) return false;  // an earlier write failed; *err stays as it was

  return true;
}

}  // namespace decodebench
