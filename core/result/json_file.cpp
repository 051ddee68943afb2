#include "core/result/json_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/error.hpp"

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

std::string read_regular_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) {
    throw usage_error(path + ": cannot open the " + what + " (missing or unreadable)");
  }
  if (!std::filesystem::is_regular_file(st)) {
    throw usage_error(path + ": the " + what + " is not a regular file" +
                      (std::filesystem::is_directory(st) ? " (a folder)" : ""));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw usage_error(path + ": cannot open the " + what + " (unreadable)");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw usage_error(path + ": error reading the " + what);
  return text.str();
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
