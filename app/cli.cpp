#include "app/cli.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>

#include "core/error.hpp"

namespace decodebench::app {

int main_entry(int argc, char** argv) {
  CLI::App app{"decodebench: measures the per-token decode step of a decoder-only transformer"};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : static_cast<int>(ExitCode::kUsage);
  } catch (const Error& e) {
    std::fprintf(stderr, "decodebench: error: %s\n", e.what());
    return static_cast<int>(e.code());
  }
  return 0;
}

}  // namespace decodebench::app
