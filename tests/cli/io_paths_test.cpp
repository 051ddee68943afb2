// Input and output paths: unusable inputs (folders, FIFOs, numbers JSON cannot hold) are usage
// errors, never a hang or an internal error, and no output may replace a file the command reads.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/support.hpp"

namespace decodebench::testing {
namespace {

const std::vector<std::string> kTiny = {"--preset",        "smollm2-135m",
                                        "--layers",        "1",
                                        "--vocab",         "300",
                                        "--ffn",           "128",
                                        "--tokens",        "2",
                                        "--prompt-tokens", "2",
                                        "--warmup",        "0",
                                        "--backend",       "cpu"};

std::vector<std::string> tiny(std::vector<std::string> extra) {
  std::vector<std::string> a = kTiny;
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

void write(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

void expect_usage_error(const CommandResult& r, const std::string& part, const std::string& what) {
  EXPECT_EQ(r.signal, 0) << what;
  EXPECT_EQ(r.exit_code, 2) << what << "\n" << r.err;
  EXPECT_NE(r.err.find(part), std::string::npos) << what << ": " << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << what << ": " << r.err;
}

class IoPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    result_ = dir_ / "result.json";
    const auto r = run_decodebench(tiny({"--json", result_.string(), "-q"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    model_ = dir_ / "m.gguf";
    const auto g = run_decodebench({"make-gguf", "-q", "--preset", "smollm2-135m", "--layers", "1",
                                    "--vocab", "300", "--ffn", "128", "--out", model_.string()});
    ASSERT_EQ(g.exit_code, 0) << g.err;
  }
  TempDir dir_;
  std::filesystem::path result_, model_;
};

// A number beyond double's range (1e400) is a JSON error of the file, not an internal error with
// exit 1, which compare uses for "regression found".
TEST_F(IoPaths, OutOfRangeNumbersAreInputErrors) {
  const auto bad = dir_ / "huge.json";
  write(bad,
        R"({"schema_version":"1.0","runs":[{"key":{"id":"x"},"results":{"samples_ns":[1e400]}}]})");
  expect_usage_error(run_decodebench({"compare", bad.string(), bad.string()}), "not valid JSON",
                     "compare");
  const auto suite = dir_ / "suite.json";
  write(suite, R"({"name":"s","configurations":[{"preset":"smollm2-135m","seed":1e400}]})");
  expect_usage_error(run_decodebench({"suite", suite.string(), "--list"}), "not valid JSON",
                     "suite");
}

// A folder is refused; a FIFO without a writer reads as empty (a JSON error, not a hang); a pipe
// with a writer, as a process substitution <(cat a.json) gives, is read.
TEST_F(IoPaths, FoldersFifosAndPipes) {
  const std::string folder = dir_.path().string();
  expect_usage_error(run_decodebench(tiny({"--preset", folder + "/"})), "is a folder",
                     "--preset folder");
  expect_usage_error(run_decodebench({"compare", folder, result_.string()}), "is a folder",
                     "compare folder");
  const auto fifo = dir_ / "fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int kTimeout = 30;
  expect_usage_error(run_decodebench({"compare", fifo.string(), result_.string()}, kTimeout),
                     "not valid JSON", "compare fifo");
  expect_usage_error(run_decodebench({"suite", fifo.string(), "--list"}, kTimeout),
                     "not valid JSON", "suite fifo");
  expect_usage_error(run_decodebench(tiny({"--preset", fifo.string()}), kTimeout), "not valid JSON",
                     "--preset fifo");
  // The writer blocks in open() until compare opens the FIFO for reading. It must be waiting there
  // before compare starts: a compare that opened and read the FIFO first would find no writer
  // (empty input), and the writer would then wait forever (a 600 s hang under a loaded CI).
  const std::string text = read_file(result_);
  std::atomic<pid_t> writer_tid{0};
  std::thread writer([&] {
    writer_tid = static_cast<pid_t>(::syscall(SYS_gettid));
    std::ofstream(fifo, std::ios::binary) << text;
  });
  const auto waiting = [&] {
    const pid_t tid = writer_tid.load();
    if (tid == 0) return false;
    std::ifstream wchan("/proc/self/task/" + std::to_string(tid) + "/wchan");
    std::string where;
    return static_cast<bool>(wchan >> where) && where == "wait_for_partner";
  };
  // /proc may not say (wchan "0" in some containers): then at most 2 s of waiting.
  for (int i = 0; i < 200 && !waiting(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const auto piped = run_decodebench({"compare", fifo.string(), result_.string()}, kTimeout);
  {
    // If compare never opened the FIFO (it failed first), open it here so the writer returns and
    // the test fails on the checks below instead of hanging.
    // Its text is drained (a writer with no reader would be killed by SIGPIPE).
    const int unblock = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
    if (unblock >= 0) {
      ::fcntl(unblock, F_SETFL, ::fcntl(unblock, F_GETFL) & ~O_NONBLOCK);
      char buf[4096];
      while (::read(unblock, buf, sizeof buf) > 0) {
      }
      ::close(unblock);
    }
    writer.join();
  }
  EXPECT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_NE(piped.out.find("no regression"), std::string::npos) << piped.out;
  // An endless input stops at 256 MiB read instead of filling memory (before round 36: 5–10 GB
  // in 10 s, then out of memory).
  expect_usage_error(run_decodebench({"compare", "/dev/zero", result_.string()}, kTimeout),
                     "more than 256 MiB read, too large for a result file", "compare /dev/zero");
  expect_usage_error(run_decodebench({"suite", "/dev/zero", "--list"}, kTimeout),
                     "too large for a suite file", "suite /dev/zero");
}

// An output that is also an input of the same command is refused, and the input survives.
TEST_F(IoPaths, NoOutputReplacesAnInput) {
  const std::string before = read_file(result_);
  expect_usage_error(run_decodebench({"compare", result_.string(), result_.string(), "--output",
                                      result_.string(), "--format", "json"}),
                     "is also an input", "compare --output");
  EXPECT_EQ(read_file(result_), before);

  const std::string model_bytes = read_file(model_);
  expect_usage_error(run_decodebench({"inspect", model_.string(), "--json", model_.string()}),
                     "is also an input", "inspect --json");
  expect_usage_error(run_decodebench({"inspect", model_.string(), "--dump", "token_embd.weight",
                                      "--dump-out", model_.string()}),
                     "is also an input", "inspect --dump-out");
  expect_usage_error(run_decodebench({"--model", model_.string(), "--backend", "cpu", "--tokens",
                                      "1", "--json", model_.string()}),
                     "is also an input", "run --json");
  // Through another name of the same file.
  const auto link = dir_ / "link.gguf";
  std::filesystem::create_symlink(model_, link);
  expect_usage_error(run_decodebench({"inspect", model_.string(), "--json", link.string()}),
                     "is also an input", "inspect --json via a link");
  EXPECT_EQ(read_file(model_), model_bytes);

  const auto suite = dir_ / "suite.json";
  const std::string suite_text =
      R"({"name":"suite","configurations":[{"preset":"smollm2-135m","layers":1,"tokens":2}]})";
  write(suite, suite_text);
  expect_usage_error(run_decodebench({"suite", suite.string(), "--json", suite.string()}),
                     "is also an input", "suite --json");
  EXPECT_EQ(read_file(suite), suite_text);

  // A sweep's configurations read the same model; a preset file is an input too.
  expect_usage_error(run_decodebench({"--model", model_.string(), "--backend", "cpu", "--tokens",
                                      "1,2", "--json", model_.string()}),
                     "is also an input", "sweep --json");
  EXPECT_EQ(read_file(model_), model_bytes);
  const auto preset = dir_ / "p.json";
  const std::string preset_text =
      read_file(source_dir() / "bench-configs/presets/smollm2-135m.json");
  write(preset, preset_text);
  expect_usage_error(
      run_decodebench(tiny({"--preset", preset.string(), "--json", preset.string()})),
      "is also an input", "--preset file --json");
  EXPECT_EQ(read_file(preset), preset_text);
}

// Reads a FIFO until its writer closes it, without blocking forever when no writer comes (a
// broken build that replaced the FIFO instead of writing into it): gives up after `timeout_s`.
std::string drain_fifo(const std::filesystem::path& fifo, int timeout_s) {
  const int fd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  if (fd < 0) return "";
  std::string text;
  bool seen = false;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < end) {
    char buf[4096];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      text.append(buf, static_cast<size_t>(n));
      seen = true;
    } else if (n == 0 && seen) {
      break;  // the writer closed it
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // no writer yet, or no data
    }
  }
  ::close(fd);
  return text;
}

// An output path that is a symbolic link is written where the link leads (the link stays), one
// that names a FIFO (or a device such as /dev/null) is written into rather than replaced, and a
// replaced file keeps its permission bits: the temporary-file-and-rename write must never turn
// any of them into a regular file.
TEST_F(IoPaths, OutputsFollowLinksAndKeepFifosAndModes) {
  namespace fs = std::filesystem;
  const auto target = dir_ / "target.json";
  write(target, "OLD");
  const auto link = dir_ / "link.json";
  fs::create_symlink(target, link);
  const auto r = run_decodebench(tiny({"-q", "--json", link.string()}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link))) << "the link was replaced";
  EXPECT_NE(read_file(target).find("\"runs\""), std::string::npos) << "the target was not written";

  // A dangling link names the file to create.
  const auto dangling = dir_ / "dangling.json";
  fs::create_symlink(dir_ / "new.json", dangling);
  ASSERT_EQ(run_decodebench(tiny({"-q", "--json", dangling.string()})).exit_code, 0);
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dangling)));
  EXPECT_TRUE(fs::is_regular_file(dir_ / "new.json"));

  // A replaced file keeps its mode (0640 here, not the 0644 of a new file).
  ASSERT_EQ(::chmod(result_.c_str(), 0640), 0);
  ASSERT_EQ(run_decodebench(tiny({"-q", "--json", result_.string()})).exit_code, 0);
  EXPECT_EQ(fs::status(result_).permissions() & fs::perms::mask,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);

  // A FIFO, directly and through a link, for run --json and make-gguf --out.
  const auto fifo = dir_ / "out.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto fifo_link = dir_ / "fifo_link";
  fs::create_symlink(fifo, fifo_link);
  const int kTimeout = 60;
  for (const auto& out : {fifo, fifo_link}) {
    std::string got;
    std::thread reader([&] { got = drain_fifo(fifo, kTimeout); });
    const auto w = run_decodebench(tiny({"-q", "--json", out.string()}), kTimeout);
    reader.join();
    EXPECT_EQ(w.exit_code, 0) << w.err;
    EXPECT_EQ(fs::status(fifo).type(), fs::file_type::fifo) << out << " was replaced";
    EXPECT_NE(got.find("\"runs\""), std::string::npos)
        << out << ": the reader got " << got.size() << " bytes";
  }
  std::string gguf;
  std::thread reader([&] { gguf = drain_fifo(fifo, kTimeout); });
  const auto g = run_decodebench({"make-gguf", "-q", "--preset", "smollm2-135m", "--layers", "1",
                                  "--vocab", "300", "--ffn", "128", "--out", fifo_link.string()},
                                 kTimeout);
  reader.join();
  EXPECT_EQ(g.exit_code, 0) << g.err;
  EXPECT_EQ(fs::status(fifo).type(), fs::file_type::fifo);
  EXPECT_EQ(gguf.substr(0, 4), "GGUF");
  EXPECT_EQ(gguf, read_file(model_)) << "the same GGUF as make-gguf wrote to a file";

  // A FIFO that no process reads is refused at once instead of waiting forever.
  const auto unread = run_decodebench(tiny({"-q", "--json", fifo.string()}), kTimeout);
  expect_usage_error(unread, "no process reads", "FIFO without a reader");

  // Setuid, setgid and sticky bits are not carried over to the result (rwx is).
  ASSERT_EQ(::chmod(result_.c_str(), 06750), 0);
  ASSERT_EQ(run_decodebench(tiny({"-q", "--json", result_.string()})).exit_code, 0);
  EXPECT_EQ(fs::status(result_).permissions() & fs::perms::mask,
            fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
}

// /dev/stdout is the descriptor stdout already has: to a pipe the document arrives there (and
// the report moves to stderr, as with --json -); to a file opened for appending it is appended,
// never a replacement of that file.
TEST_F(IoPaths, DevStdoutWritesThroughTheDescriptor) {
  if (!std::filesystem::exists("/dev/stdout")) GTEST_SKIP() << "no /dev/stdout here";
  const auto piped = run_decodebench(tiny({"--json", "/dev/stdout"}));
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(nlohmann::json::parse(piped.out)["runs"].size(), 1u) << piped.out.substr(0, 200);
  EXPECT_NE(piped.err.find("tokens/s"), std::string::npos) << "the report goes to stderr";
  const auto log = dir_ / "log.txt";
  write(log, "LOG LINE\n");
  const std::string cmd = "'" + decodebench_bin().string() + "' --preset smollm2-135m --layers 1 " +
                          "--vocab 300 --ffn 128 --tokens 2 --prompt-tokens 2 --warmup 0 " +
                          "--backend cpu -q --json /dev/stdout >> '" + log.string() + "'";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
  const std::string text = read_file(log);
  EXPECT_EQ(text.rfind("LOG LINE\n{", 0), 0u) << text.substr(0, 100);
}

// A link in a shared sticky folder (as /tmp) that another user owns is not followed, as the
// kernel's protected_symlinks rule: otherwise that user could make a run by root replace any file.
TEST_F(IoPaths, LinksOfOtherUsersInStickyFoldersAreRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a link to another user";
  const auto shared = dir_ / "shared";
  std::filesystem::create_directory(shared);
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);
  const auto victim = dir_ / "victim.txt";
  write(victim, "VICTIM");
  const auto link = shared / "result.json";
  std::filesystem::create_symlink(victim, link);
  ASSERT_EQ(::lchown(link.c_str(), 65534, 65534), 0);
  expect_usage_error(run_decodebench(tiny({"-q", "--json", link.string()})), "protected_symlinks",
                     "foreign link in a sticky folder");
  EXPECT_EQ(read_file(victim), "VICTIM");
  // The same link owned by the user who runs it is followed.
  ASSERT_EQ(::lchown(link.c_str(), ::geteuid(), ::getegid()), 0);
  ASSERT_EQ(run_decodebench(tiny({"-q", "--json", link.string()})).exit_code, 0);
  EXPECT_NE(read_file(victim).find("\"runs\""), std::string::npos);
}

// Output that cannot reach stdout (here /dev/full: every write fails with ENOSPC) is an error,
// never exit 0 with the document lost: --json -, the terminal report, compare's output (exit 3,
// disk full; compare's exit 1 would read as a regression).
TEST_F(IoPaths, StdoutWriteFailuresAreErrors) {
  if (!std::filesystem::is_character_file("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  const auto err = dir_ / "err.txt";
  const auto run = [&](const std::vector<std::string>& args) {
    std::string cmd = "'" + decodebench_bin().string() + "'";
    for (const auto& a : args) cmd += " '" + a + "'";
    cmd += " > /dev/full 2> '" + err.string() + "'";
    const int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  EXPECT_EQ(run(tiny({"-q", "--json", "-"})), 3);
  EXPECT_NE(read_file(err).find("No space left on device"), std::string::npos) << read_file(err);
  EXPECT_EQ(run(tiny({})), 3) << read_file(err);
  EXPECT_NE(read_file(err).find("stdout"), std::string::npos) << read_file(err);
  EXPECT_EQ(run({"compare", result_.string(), result_.string(), "--format", "json"}), 3)
      << read_file(err);
  EXPECT_EQ(run({"compare", result_.string(), result_.string()}), 3) << read_file(err);
  EXPECT_EQ(run(tiny({"-q"})), 0) << "nothing to write: " << read_file(err);
  // A lost report does not cost the result file: it is written, then the exit code says 3.
  const auto kept = dir_ / "kept.json";
  EXPECT_EQ(run(tiny({"--json", kept.string()})), 3) << read_file(err);
  EXPECT_NE(read_file(kept).find("\"runs\""), std::string::npos);
}

// inspect: a dump that fails leaves an existing --json file as it was; JSON and dump cannot share
// a destination (stdout included: the two would interleave).
TEST_F(IoPaths, InspectDumpFailureKeepsTheJsonFile) {
  const auto out = dir_ / "inspect.json";
  write(out, "OLD");
  expect_usage_error(run_decodebench({"inspect", model_.string(), "--json", out.string(), "--dump",
                                      "no.such.tensor", "--dump-out", (dir_ / "x.bin").string()}),
                     "no.such.tensor", "inspect --dump unknown");
  EXPECT_EQ(read_file(out), "OLD");
  expect_usage_error(run_decodebench({"inspect", model_.string(), "--json", "-", "--dump",
                                      "token_embd.weight", "--dump-out", "-"}),
                     "same destination", "inspect both to stdout");
  const auto same = dir_ / "same.out";
  expect_usage_error(run_decodebench({"inspect", model_.string(), "--json", same.string(), "--dump",
                                      "token_embd.weight", "--dump-out", same.string()}),
                     "same destination", "inspect same file");
}

}  // namespace
}  // namespace decodebench::testing
