// decodebench entry point: wires the subcommands, parses, and maps errors to exit codes.
#include "app/cli.hpp"

int main(int argc, char** argv) { return decodebench::app::main_entry(argc, argv); }
