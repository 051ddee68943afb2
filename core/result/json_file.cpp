#include "core/result/json_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "core/error.hpp"
#include "core/model/preset.hpp"

namespace decodebench {

namespace {
std::filesystem::path parent_of(const std::string& path) {
  std::filesystem::path p(path);
  return p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
}
}  // namespace

void check_destination(const std::string& path, const std::string& flag) {
  if (path == "-") return;
  if (path.empty()) throw usage_error(flag + ": empty path");
  const auto dir = parent_of(path);
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw usage_error(flag + ": folder '" + dir.string() + "' does not exist (for '" + path + "')");
  }
  if (std::filesystem::is_directory(path, ec)) {
    throw usage_error(flag + ": '" + path + "' is a folder, not a file");
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    throw usage_error(flag + ": folder '" + dir.string() + "' is not writable");
  }
  // Prove it: create and remove a probe file now rather than fail after a long run.
  const std::string probe = path + ".probe." + std::to_string(::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) {
    throw usage_error(flag + ": cannot create files next to '" + path +
                      "': " + std::strerror(errno));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

void check_json_destination(const std::string& path) { check_destination(path, "--json"); }

void check_not_an_input(const std::string& path, const std::string& flag,
                        const std::vector<std::string>& inputs) {
  if (path == "-" || path.empty()) return;
  for (const std::string& input : inputs) {
    if (input.empty() || input == "-") continue;
    std::error_code ec;
    if (path == input || std::filesystem::equivalent(path, input, ec)) {
      throw usage_error(flag + ": '" + path + "' is also an input of this command ('" + input +
                        "'); writing it would replace what is being read");
    }
  }
}

std::vector<std::string> run_input_files(const std::string& model_path, const std::string& preset) {
  std::vector<std::string> files;
  if (!model_path.empty()) files.push_back(model_path);
  if (preset_names_a_file(preset)) files.push_back(preset);
  return files;
}

std::string read_input_file(const std::string& path, const std::string& what) {
  // O_NONBLOCK: opening a FIFO that has no writer must not block. Pipes with a writer (process
  // substitution, /dev/stdin) read normally once the flag is cleared; one without a writer reads
  // as empty.
  struct Fd {
    int fd;
    ~Fd() {
      if (fd >= 0) ::close(fd);
    }
  } f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  const auto fail = [&](const std::string& problem) {
    return usage_error(path + ": " + problem + " the " + what + " (" + std::strerror(errno) + ")");
  };
  if (f.fd < 0) throw fail("cannot open");
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw fail("cannot read");
  if (S_ISDIR(st.st_mode)) throw usage_error(path + ": the " + what + " is a folder, not a file");
  const int flags = ::fcntl(f.fd, F_GETFL);
  if (flags < 0 || ::fcntl(f.fd, F_SETFL, flags & ~O_NONBLOCK) != 0) throw fail("cannot read");
  std::string text;
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n > 0) {
      text.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      return text;
    } else if (errno != EINTR) {
      throw fail("error reading");
    }
  }
}

void write_text_file(const std::string& path, const std::string& text, const std::string& flag) {
  if (path == "-") {
    std::cout << text << std::flush;
    return;
  }
  check_destination(path, flag);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw usage_error(flag + ": cannot write '" + tmp + "': " + std::strerror(errno));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw usage_error(flag + ": cannot rename '" + tmp + "' to '" + path +
                      "': " + std::strerror(err));
  }
}

void write_json_file(const std::string& path, const nlohmann::json& doc) {
  // Generated text can end inside a multi-byte UTF-8 character: replace invalid bytes (U+FFFD)
  // rather than fail the run.
  write_text_file(path, doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n",
                  "--json");
}

}  // namespace decodebench
