#include "tests/support/support.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace decodebench::testing {

std::filesystem::path source_dir() {
  const char* env = std::getenv("DECODEBENCH_SOURCE_DIR");
  return env != nullptr && *env != '\0' ? env : DECODEBENCH_SOURCE_DIR;
}
std::filesystem::path decodebench_bin() {
  const char* env = std::getenv("DECODEBENCH_BIN");
  return env != nullptr && *env != '\0' ? env : DECODEBENCH_BIN;
}
std::string python() {
  // The environment wins: test binaries copied to another machine find its interpreter.
  const char* env = std::getenv("DECODEBENCH_PYTHON");
  return env != nullptr && *env != '\0' ? env : DECODEBENCH_PYTHON;
}

TempDir::TempDir() {
  std::random_device rd;
  const auto base = std::filesystem::temp_directory_path();
  for (int i = 0; i < 100; ++i) {
    auto candidate = base / ("decodebench-test-" + std::to_string(rd()));
    if (std::filesystem::create_directory(candidate)) {
      path_ = candidate;
      return;
    }
  }
  throw std::runtime_error("cannot create a temporary folder");
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string printed(const std::function<void(FILE*)>& print) {
  const std::unique_ptr<FILE, int (*)(FILE*)> f(std::tmpfile(), &std::fclose);
  if (!f) throw std::runtime_error("cannot make a temporary file");
  print(f.get());
  std::rewind(f.get());
  std::string text;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) text.append(buf, n);
  return text;
}

CommandResult run_command(const std::vector<std::string>& argv, int timeout_s,
                          const std::vector<std::string>& env, const Interrupt* interrupt) {
  TempDir dir;
  const auto out_path = dir / "stdout";
  const auto err_path = dir / "stderr";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  for (const auto& e : env) env_strings.push_back(e);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> c_args;
  for (auto& a : args) c_args.push_back(a.data());
  c_args.push_back(nullptr);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults, none;
  sigemptyset(&defaults);
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&defaults, sig);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, c_args[0], &actions, &attr, c_args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  CommandResult result;
  if (rc != 0) {
    result.err = "posix_spawn failed for " + argv[0];
    return result;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  bool interrupted = false;
  for (;;) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (interrupt != nullptr && !interrupted && interrupt->when()) {
      kill(pid, interrupt->signal);
      interrupted = true;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  result.interrupted = interrupted;
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.out = read_file(out_path);
  result.err = read_file(err_path);
  return result;
}

CommandResult run_decodebench(const std::vector<std::string>& args, int timeout_s,
                              const std::vector<std::string>& env, const Interrupt* interrupt) {
  std::vector<std::string> argv{decodebench_bin().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv, timeout_s, env, interrupt);
}

bool python_has_module(const std::string& module, std::string* reason) {
  if (python().empty()) {
    *reason = "no Python interpreter found at configure time";
    return false;
  }
  const auto r = run_command({python(), "-c", "import " + module}, 60);
  if (r.exit_code != 0) {
    *reason = "import " + module + " failed: " + r.err.substr(0, 200);
    return false;
  }
  return true;
}

}  // namespace decodebench::testing
