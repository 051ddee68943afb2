#include "core/result/json_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "core/error.hpp"
#include "core/model/preset.hpp"
#include "core/output_file.hpp"
#include "core/result/json_text.hpp"
#include "core/text.hpp"

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
  const OutputTarget target = resolve_output(path);
  if (target.kind != OutputTarget::Kind::kReplace) {  // written in place: nothing to create
    if (target.kind == OutputTarget::Kind::kDirect && ::access(target.path.c_str(), W_OK) != 0) {
      throw usage_error(flag + ": '" + target.path + "' is not writable: " + std::strerror(errno));
    }
    return;
  }
  // A link is checked where it leads: that folder gets the temporary file.
  const std::string& file = target.path;
  const auto dir = parent_of(file);
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    // The part before the last '/' may exist as a file ('a.json/x.json'): not "does not exist".
    const bool exists = std::filesystem::exists(dir, ec);
    throw usage_error(flag + ": " +
                      (exists ? "'" + echo_path(dir.string()) + "' is not a folder"
                              : "folder '" + echo_path(dir.string()) + "' does not exist") +
                      " (for '" + echo_path(path) + "')");
  }
  if (std::filesystem::is_directory(file, ec)) {
    throw usage_error(flag + ": '" + echo_path(path) + "' is a folder, not a file");
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    throw usage_error(flag + ": folder '" + dir.string() + "' is not writable");
  }
  // Prove it: create and remove a probe file now rather than fail after a long run.
  std::string probe;
  const int fd = create_fresh_file(file + ".probe", &probe);
  if (fd < 0) {
    throw usage_error(flag + ": cannot create files next to '" + echo_path(path) +
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
    return usage_error(echo_path(path) + ": " + problem + " the " + what + " (" +
                       std::strerror(errno) + ")");
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
      // An endless source (/dev/zero, a runaway pipe) would read until memory runs out; a
      // regular file has its size (a large suite's result document may pass the cap).
      if (!S_ISREG(st.st_mode) && text.size() + static_cast<size_t>(n) > kMaxInputFileBytes) {
        throw usage_error(path + ": more than " + std::to_string(kMaxInputFileBytes >> 20) +
                          " MiB read, too large for a " + what +
                          " (an endless input such as /dev/zero?)");
      }
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
    errno = 0;
    std::cout << text << std::flush;
    int err = errno;  // the failed write's, before anything else can set errno
    if (!stdout_ok(&err) || !std::cout) {
      if (err == 0) throw runtime_error("cannot write to stdout: part of the output was lost");
      throw write_error("stdout", err);
    }
    return;
  }
  check_destination(path, flag);
  OutputFile out(path, flag);
  out.write(text.data(), text.size());
  out.commit();
}

void write_json_file(const std::string& path, const nlohmann::json& doc) {
  // json_text: generated text can end inside a multi-byte UTF-8 character, so invalid bytes
  // become U+FFFD rather than fail the run; per-step samples are packed into lines.
  write_text_file(path, json_text(doc) + "\n", "--json");
}

}  // namespace decodebench
