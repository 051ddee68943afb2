#include "core/output_file.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>

namespace decodebench {

namespace {

// Temporary files being written, which the handler of SIGINT, SIGTERM and SIGHUP removes before
// the signal ends the process as it would have: an interrupted make-gguf or --dump-out would
// otherwise leave a temporary file as large as its output (gigabytes for a 7B model) each time.
// Fixed storage and lock-free atomics only, as the handler may use nothing else (unlink and
// raise are async-signal-safe: POSIX.1-2017, 2.4.3).
constexpr int kTempSlots = 16;
constexpr size_t kTempPathMax = 4096;
static_assert(std::atomic<int>::is_always_lock_free);
struct TempSlot {
  // 0 free, 1 being filled, 2 a path to remove, 3 taken by the handler (the process is ending:
  // another thread may not free and refill the slot while the handler reads its path).
  std::atomic<int> state{0};
  char path[kTempPathMax];
};
TempSlot g_temp_files[kTempSlots];
std::atomic<bool> g_handlers_installed{false};

extern "C" void remove_temp_files_and_reraise(int sig) {
  for (TempSlot& slot : g_temp_files) {
    int ready = 2;
    if (slot.state.compare_exchange_strong(ready, 3)) ::unlink(slot.path);
  }
  // SA_RESETHAND restored the default action on entry; the signal, blocked while this handler
  // runs, is delivered when it returns, so the exit status still names it (130 for SIGINT).
  ::raise(sig);
}

// Installs the handler for each of the three signals whose action is the default one: a signal
// that the user ignores (nohup) or that another handler takes stays as it is.
void install_temp_file_handlers() {
  if (g_handlers_installed.exchange(true)) return;
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0 || (old.sa_flags & SA_SIGINFO) != 0 ||
        old.sa_handler != SIG_DFL) {
      continue;
    }
    struct sigaction sa {};
    sa.sa_handler = remove_temp_files_and_reraise;
    sigemptyset(&sa.sa_mask);
    for (const int other : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&sa.sa_mask, other);
    sa.sa_flags = SA_RESETHAND;
    ::sigaction(sig, &sa, nullptr);
  }
}

// Records `path` for the handler; returns its slot, or -1 when every slot is taken or the path
// is too long (the file is then only removed by the destructor, as before).
int register_temp_file(const std::string& path) {
  if (path.size() >= kTempPathMax) return -1;
  install_temp_file_handlers();
  for (int i = 0; i < kTempSlots; ++i) {
    int free_slot = 0;
    if (g_temp_files[i].state.compare_exchange_strong(free_slot, 1)) {
      std::memcpy(g_temp_files[i].path, path.c_str(), path.size() + 1);
      g_temp_files[i].state.store(2);
      return i;
    }
  }
  return -1;
}

void unregister_temp_file(int slot) {
  int ready = 2;  // a slot the handler took (3) stays taken
  if (slot >= 0) g_temp_files[slot].state.compare_exchange_strong(ready, 0);
}

// Blocks SIGINT, SIGTERM and SIGHUP in this thread while alive, so that a temporary file is
// registered before one of them can end the process (between its creation and its slot).
class InterruptsHeld {
 public:
  InterruptsHeld() {
    sigset_t set;
    sigemptyset(&set);
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, sig);
    held_ = ::pthread_sigmask(SIG_BLOCK, &set, &old_) == 0;
  }
  ~InterruptsHeld() {
    if (held_) ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  InterruptsHeld(const InterruptsHeld&) = delete;
  InterruptsHeld& operator=(const InterruptsHeld&) = delete;

 private:
  sigset_t old_{};
  bool held_ = false;
};

// Whether `st` is the file that descriptor `fd` writes to (same device and inode).
bool same_file_as_fd(const struct stat& st, int fd) {
  struct stat fs {};
  return ::fstat(fd, &fs) == 0 && fs.st_dev == st.st_dev && fs.st_ino == st.st_ino;
}

// The kernel's protected_symlinks rule (fs.protected_symlinks = 1): a link in a sticky
// world-writable folder is followed only when its owner is the follower or the folder's owner.
bool may_follow(const std::filesystem::path& link) {
  struct stat ls {
  }, ds{};
  const auto dir = link.has_parent_path() ? link.parent_path() : std::filesystem::path(".");
  if (::lstat(link.c_str(), &ls) != 0 || ::stat(dir.c_str(), &ds) != 0) return false;
  const bool shared = (ds.st_mode & S_ISVTX) != 0 && (ds.st_mode & S_IWOTH) != 0;
  return !shared || ls.st_uid == ::geteuid() || ls.st_uid == ds.st_uid;
}

}  // namespace

OutputTarget resolve_output(const std::string& path) {
  namespace fs = std::filesystem;
  // Follow links one at a time (a dangling link names the file to create; 40 as Linux's
  // MAXSYMLINKS), each only where the kernel's protected_symlinks rule would follow it. The
  // kernel's own links under /proc (/dev/stdout → /proc/self/fd/1 → "pipe:[N]") name no path:
  // there the walk stops and the kernel resolves the rest.
  fs::path p(path);
  for (int depth = 0;; ++depth) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec))) break;
    if (depth == 40) {
      throw usage_error("'" + path + "': symbolic links loop or are nested too deep");
    }
    if (!may_follow(p)) {
      throw usage_error("'" + path + "': the symbolic link '" + p.string() +
                        "' sits in a shared sticky folder and belongs to another user; not "
                        "followed (as the kernel's protected_symlinks)");
    }
    if (p.string().rfind("/proc/", 0) == 0) break;
    const fs::path next = fs::read_symlink(p, ec);
    if (ec) throw usage_error("'" + path + "': cannot read the link: " + ec.message());
    p = next.is_absolute() ? next : p.parent_path() / next;
  }
  OutputTarget t;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
    // A regular file, a folder (refused by the callers) or nothing yet. The file stdout or
    // stderr already writes to (a file both name) goes through that descriptor, which keeps its
    // offset and append mode: replacing it would lose what the shell's redirection holds.
    t.path = p.string();
    if (::stat(t.path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      if (same_file_as_fd(st, STDOUT_FILENO)) t.kind = OutputTarget::Kind::kStdout;
      if (same_file_as_fd(st, STDERR_FILENO)) t.kind = OutputTarget::Kind::kStderr;
      t.keep_mode = true;
      t.mode = st.st_mode & 0777;  // never setuid, setgid or sticky on a result file
    }
    return t;
  }
  // Something that exists and is no regular file, reached the way the kernel resolves it.
  t.path = path;
  const bool tty = S_ISCHR(st.st_mode) && ::isatty(STDOUT_FILENO) != 0;
  if (same_file_as_fd(st, STDOUT_FILENO) && (!S_ISCHR(st.st_mode) || tty)) {
    t.kind = OutputTarget::Kind::kStdout;  // a pipe or the terminal stdout writes to
  } else if (same_file_as_fd(st, STDERR_FILENO) &&
             (!S_ISCHR(st.st_mode) || ::isatty(STDERR_FILENO) != 0)) {
    t.kind = OutputTarget::Kind::kStderr;
  } else if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
    t.kind = OutputTarget::Kind::kDirect;
  } else {
    throw usage_error("'" + path + "' is a " +
                      (S_ISBLK(st.st_mode) ? "block device" : "socket or other special file") +
                      ", not a file to write a result to");
  }
  return t;
}

bool writes_to_stdout(const std::string& path) {
  if (path == "-") return true;
  if (path.empty()) return false;
  try {
    return resolve_output(path).kind == OutputTarget::Kind::kStdout;
  } catch (const Error&) {
    return false;  // refused later, where the path is checked
  }
}

int create_fresh_file(const std::string& stem, std::string* name) {
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    *name = stem + "." + std::to_string(::getpid()) + "." + std::to_string(attempt);
    fd = ::open(name->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  return fd;
}

Error write_error(const std::string& path, int err) {
  const std::string message = "cannot write '" + path + "': " + std::strerror(err);
  return err == ENOSPC || err == EDQUOT ? resource_error(message) : runtime_error(message);
}

OutputFile::OutputFile(const std::string& path, const std::string& flag)
    : target_(resolve_output(path)), flag_(flag) {
  using Kind = OutputTarget::Kind;
  if (target_.kind == Kind::kStdout || target_.kind == Kind::kStderr) {
    writing_ = target_.kind == Kind::kStdout ? "stdout" : "stderr";
    file_ = target_.kind == Kind::kStdout ? stdout : stderr;
    return;
  }
  int fd = -1;
  if (target_.kind == Kind::kDirect) {
    writing_ = target_.path;
    // Non-blocking: a FIFO that no process reads fails (ENXIO) instead of waiting forever.
    fd = ::open(writing_.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0 && errno == ENXIO) {
      throw usage_error(flag_ + ": '" + writing_ + "' is a FIFO that no process reads");
    }
    const int fl = fd >= 0 ? ::fcntl(fd, F_GETFL) : -1;
    if (fl >= 0) ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  } else {
    const InterruptsHeld held;
    fd = create_fresh_file(target_.path + ".tmp", &writing_);
    if (fd >= 0) temp_slot_ = register_temp_file(writing_);
  }
  if (fd >= 0) file_ = ::fdopen(fd, "wb");
  if (file_ == nullptr) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    if (fd >= 0 && target_.kind == Kind::kReplace) ::unlink(writing_.c_str());
    unregister_temp_file(temp_slot_);
    throw usage_error(flag_ + ": cannot create '" + writing_ + "': " + std::strerror(err));
  }
}

OutputFile::~OutputFile() {
  const bool owned = file_ != stdout && file_ != stderr;
  if (file_ != nullptr && owned) std::fclose(file_);
  if (!committed_ && target_.kind == OutputTarget::Kind::kReplace) std::remove(writing_.c_str());
  unregister_temp_file(temp_slot_);
}

void OutputFile::write(const void* data, size_t bytes) {
  if (bytes != 0 && std::fwrite(data, 1, bytes, file_) != bytes) throw write_error(writing_, errno);
}

void OutputFile::commit() {
  if (std::fflush(file_) != 0 || std::ferror(file_)) throw write_error(writing_, errno);
  if (file_ == stdout || file_ == stderr) {
    committed_ = true;
    return;
  }
  if (target_.keep_mode && ::fchmod(::fileno(file_), target_.mode) != 0) {
    throw write_error(writing_, errno);
  }
  const int closed = std::fclose(file_);
  file_ = nullptr;
  if (closed != 0) throw write_error(writing_, errno);
  if (target_.kind == OutputTarget::Kind::kReplace &&
      std::rename(writing_.c_str(), target_.path.c_str()) != 0) {
    throw usage_error(flag_ + ": cannot rename '" + writing_ + "' to '" + target_.path +
                      "': " + std::strerror(errno));
  }
  unregister_temp_file(temp_slot_);
  temp_slot_ = -1;
  committed_ = true;
}

namespace {
// errno of the first failed flush of stdout (flush_output), 0 when none failed.
int g_stdout_errno = 0;
}  // namespace

void flush_output(std::FILE* f) {
  errno = 0;
  if ((std::fflush(f) != 0 || std::ferror(f)) && f == stdout && g_stdout_errno == 0) {
    g_stdout_errno = errno;
  }
}

bool stdout_ok(int* err) {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int flush_errno = errno;
  if (flushed && !std::ferror(stdout)) return true;
  if (g_stdout_errno != 0) {
    *err = g_stdout_errno;
  } else if (!flushed && flush_errno != 0) {
    *err = flush_errno;
  }
  return false;
}

}  // namespace decodebench
