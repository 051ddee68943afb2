#include "app/cli.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>

#include "app/commands/bench_kernels.hpp"
#include "app/commands/compare.hpp"
#include "app/commands/doctor.hpp"
#include "app/commands/inspect.hpp"
#include "app/commands/make_gguf.hpp"
#include "app/commands/run.hpp"
#include "app/commands/suite.hpp"
#include "app/parse_errors.hpp"
#include "app/report/text.hpp"
#include "build_info.hpp"
#include "core/error.hpp"
#include "core/output_file.hpp"
#include "core/result/environment.hpp"
#include "core/suite/suite.hpp"
#include "core/text.hpp"

#ifdef DECODEBENCH_HAVE_CUDA
#include "cuda/provider.hpp"
#endif

namespace decodebench::app {

namespace {

// Checks made on argv before CLI11 sees it, and the integer options' values rewritten as plain
// decimal (010 → 10), so that a sweep's labels show the values its runs use. Throws
// decodebench::Error (exit 2).
void check_raw_values(std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string& a = args[i];
    // CLI11 reads an empty value as "not given" (--layers "" ran the preset's layer count).
    if (a.empty()) {
      throw usage_error((i > 0 ? echo_value(args[i - 1]) + ": empty value" : "empty argument") +
                        " (give a value, or leave the option out)");
    }
    const size_t eq = a.find('=');
    const bool inline_form = a.starts_with("--") && eq != std::string::npos;
    if (inline_form && eq + 1 == a.size()) {  // "--layers=" (not "--prompt=2+2=")
      throw usage_error(echo_value(a.substr(0, eq)) +
                        ": empty value (give a value, or leave the option out)");
    }
    const std::string flag = inline_form ? a.substr(0, eq) : (i > 0 ? args[i - 1] : "");
    if (!is_integer_run_flag(flag)) continue;
    if (!inline_form && a.starts_with("--")) continue;  // a flag after a flag without a value
    // Every comma-separated item, empty ones included (the sweep refuses those later).
    const std::string_view list = inline_form ? std::string_view(a).substr(eq + 1) : a;
    std::string rewritten = inline_form ? a.substr(0, eq + 1) : "";
    for (size_t start = 0;;) {
      const size_t comma = list.find(',', start);
      std::string value(list.substr(start, comma == list.npos ? list.npos : comma - start));
      if (const std::string problem = plain_decimal_integer(value); !problem.empty()) {
        throw usage_error(flag + ": " + problem);
      }
      rewritten += value;
      if (comma == list.npos) break;
      rewritten += ',';
      start = comma + 1;
    }
    a = std::move(rewritten);
  }
}

constexpr const char* kExitCodes =
    "Exit codes: 0 success (compare: no regression) · 1 runtime failure (compare: regression) · "
    "2 usage or input error · 3 insufficient resources (no CUDA device, memory, disk) · "
    "4 verification failed · 5 CUDA context unusable (a failed capture or a kernel fault)";
/// The main run's help names where the measurement switches are documented (they are
/// environment variables, so no flag lists them).
constexpr const char* kSwitchesHelp =
    "Measurement switches: DECODEBENCH_* environment variables make the CUDA backend run other "
    "kernel forms, for A/B measurements (a normal run needs none); docs/measurement-switches.md "
    "lists them, and a result records those set.";
/// The sweep paragraph of the main run's help: which flags take comma lists.
std::string sweeps_help() {
  return "Sweeps: these run flags accept comma lists (--layers 2,4 --dtype f16,bf16): " +
         sweep_flag_list() +
         ". The runs are the cartesian product in flag order, first flag outermost (a value "
         "listed twice runs twice: an A/A pair), and --json writes one suite document "
         "(docs/ci.md). Never split: --model, --prompt, --prompt-ids, --json.";
}
// Parses and runs one command; returns its exit code.
int run_entry(int argc, char** argv) {
#ifdef DECODEBENCH_HAVE_CUDA
  cuda::install_provider();
#endif
  CLI::App app{"decodebench: measures the per-token decode step of a decoder-only transformer"};
  app.footer(sweeps_help() + "\n" + kSwitchesHelp + "\n" + kExitCodes);
  const std::string probe = *build_info::kProbe == '\0'
                                ? std::string()
                                : std::string(", probe build: ") + build_info::kProbe;
  app.set_version_flag("--version", std::string("decodebench ") + build_info::kVersion + " (" +
                                        build_info::kGitSha + probe + ")");
  app.require_subcommand(0, 1);
  // A flag given twice takes its last value, so wrappers can append overrides.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

  RunFlags root_flags;
  add_run_flags(app, root_flags);
  RunFlags run_flags;
  CLI::App* run = app.add_subcommand("run", "Decode a model and time each step (the default)");
  add_run_flags(*run, run_flags);

  int exit_code = 0;  // set by subcommand callbacks
  setup_inspect(app);
  setup_doctor(app, &exit_code);
  setup_bandwidth(app, &exit_code);
  setup_compare(app, &exit_code);
  setup_suite(app, &exit_code);
  setup_bench_kernels(app, &exit_code);
  setup_make_gguf(app);
  require_decimal_integers(app);  // the root's run flags and every command's
  // Subcommands inherit the main help's footer; only the run sweeps. A command with a footer of
  // its own (suite, make-gguf) gets the exit codes after it.
  const std::string footer = sweeps_help() + "\n" + kSwitchesHelp + "\n" + kExitCodes;
  for (CLI::App* sub : app.get_subcommands({})) {
    if (sub == run) continue;
    const std::string own = sub->get_footer();
    if (own == footer) {
      sub->footer(kExitCodes);
    } else if (own.find("Exit codes") == std::string::npos) {
      sub->footer(own + (own.empty() || own.back() == '\n' ? "" : "\n") + kExitCodes);
    }
  }

  std::vector<std::string> args(argv + 1, argv + argc);
  // The root parser takes the run flags, so a run flag before a command ("decodebench --layers 2
  // compare A B") would be parsed and then ignored by the command: refused here, after parsing and
  // before the command's callback runs.
  app.parse_complete_callback([&app, &args] {
    const auto named = app.get_subcommands();
    if (named.empty()) {
      // A command after "--" is parsed (CLI11 2.1) but not listed as named, so the main run
      // would go ahead without it.
      const auto parsed = app.get_subcommands([](CLI::App* s) { return s->parsed() > 0; });
      if (!parsed.empty()) {
        const std::string name = parsed.front()->get_name();
        throw CLI::ValidationError("'" + name + "' came after '--', which ends the flags: name " +
                                   "the command first (decodebench " + name + " ...)");
      }
      return;
    }
    const std::string message = flags_before_command_message(app, *named.front(), args);
    if (!message.empty()) throw CLI::ValidationError(message);
  });

  bool verbose = false;
  try {
    // A comma list in a sweep flag (--layers 2,4 --dtype f16,bf16) runs the cartesian product.
    check_raw_values(args);
    const std::vector<SweepPoint> sweep = expand_sweep(args);
    if (sweep.size() > 1) {
      // A sweep runs the main run only: a command after its flags is named as such.
      const std::string message = command_after_flags_message(app, args);
      if (!message.empty()) throw CLI::ValidationError(message);
      return sweep_command(sweep, args);
    }
    app.parse(argc, argv);
    RunFlags& flags = run->parsed() ? run_flags : root_flags;
    verbose = flags.verbose;
    if (app.get_subcommands().empty() || run->parsed()) return run_command(flags);
    return exit_code;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // Point at the help that lists the flags in question: the subcommand's own, if one was named.
    std::string help = "decodebench";
    const auto named = app.get_subcommands([](CLI::App* s) { return s->parsed(); });
    if (!named.empty()) help += " " + named.front()->get_name();
    const std::string message =
        parse_error_message(app, named.empty() ? nullptr : named.front(), e, &args);
    std::fprintf(stderr, "decodebench: error: %s\nRun '%s --help' for the flags.\n",
                 printable_message(message).c_str(), help.c_str());
    return static_cast<int>(ExitCode::kUsage);
  } catch (const Error& e) {
    std::fprintf(stderr, "decodebench: error: %s\n", printable_message(e.what()).c_str());
    return static_cast<int>(e.code());
  } catch (const std::bad_alloc&) {
    // The figures say whether RAM or a ulimit -v ran out (the failed allocation is unwound, so
    // these small strings can be allocated; if not, the plain message).
    std::string state;
    try {
      state = host_memory_state();
    } catch (const std::exception&) {
      state.clear();
    }
    std::fprintf(stderr, "decodebench: error: out of host memory%s%s%s\n",
                 state.empty() ? "" : " (", state.c_str(), state.empty() ? "" : ")");
    return static_cast<int>(ExitCode::kResources);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "decodebench: internal error: %s\n", printable_message(e.what()).c_str());
    if (verbose) std::fprintf(stderr, "(please report this with the command line)\n");
    return static_cast<int>(ExitCode::kRuntime);
  }
}

}  // namespace

int main_entry(int argc, char** argv) {
  // A reader that closes the pipe early (`decodebench ... | head -1`) must not kill the run by
  // SIGPIPE before its --json file is written: a failed write to stdout is reported at the end
  // instead, with its errno and a non-zero exit code.
  std::signal(SIGPIPE, SIG_IGN);
  // A file or pipe gets one large buffer, so that a failed write (a full disk) shows at the final
  // flush below with its errno; a terminal keeps its line buffering.
  static char stdout_buffer[size_t{1} << 20];  // glibc ignores the size without a buffer
  if (::isatty(STDOUT_FILENO) == 0)
    std::setvbuf(stdout, stdout_buffer, _IOFBF, sizeof stdout_buffer);
  int code = run_entry(argc, argv);
  // A report or JSON document that did not reach stdout (full disk, closed file) is a failure,
  // not a success with the output lost.
  // (A command that already failed has said why; its stdout error is most likely the same one.)
  int err = 0;
  if (!stdout_ok(&err) && code == 0) {
    std::fprintf(stderr, "decodebench: error: writing to stdout failed: %s\n",
                 err != 0 ? std::strerror(err) : "part of the output was not written");
    code = static_cast<int>(err != 0 ? write_error("stdout", err).code() : ExitCode::kRuntime);
  }
  return code;
}

}  // namespace decodebench::app
