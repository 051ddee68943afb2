// Run options shared by tests that need a real RunReport quickly.
#pragma once

#include "core/run_config.hpp"

namespace decodebench::testing {

/// RunOptions of a one-layer SmolLM2-shape decode on the CPU: vocabulary 256, FFN width 128, F32
/// weights, 4 tokens after a 3-token prompt, 1 warm-up step, one thread. Its run takes
/// milliseconds; tests of what is made from a RunReport (JSON, terminal) start from it.
inline RunOptions tiny_cpu_run_options() {
  RunOptions o;
  o.preset = "smollm2-135m";
  o.layers = 1;
  o.vocab = 256;
  o.ffn = 128;
  o.dtype = "f32";
  o.tokens = 4;
  o.warmup = 1;
  o.prompt_tokens = 3;
  o.backend = "cpu";
  o.threads = 1;
  return o;
}

}  // namespace decodebench::testing
