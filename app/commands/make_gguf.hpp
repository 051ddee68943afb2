// `decodebench make-gguf`: writes a synthetic model (shape flags or --preset, --dtype, --seed) as
// a GGUF file that decodebench and other engines (llama.cpp, the Python gguf package) can read.
#pragma once

#include <CLI/CLI.hpp>

namespace decodebench::app {

/// Adds `make-gguf [--preset NAME] [shape flags] [--dtype T] [--seed S] --out FILE [--name TEXT]
/// [--threads N] [-q]`. The shape resolves exactly as for `decodebench run` (defaults < preset <
/// flags), the weights are those of the synthetic run with the same shape, dtype and seed, and
/// the file is written by write_synthetic_gguf() (core/model/gguf_export.hpp): a temporary file
/// renamed over FILE. Its callback throws decodebench::Error: exit 2 for bad flags, a shape the
/// dtype does not fit or an unwritable FILE, exit 3 when memory or disk run out.
void setup_make_gguf(CLI::App& app);

}  // namespace decodebench::app
