#include "app/commands/make_gguf.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "core/cpu/thread_pool.hpp"
#include "core/error.hpp"
#include "core/gguf/reader.hpp"
#include "core/model/gguf_export.hpp"
#include "core/model/synthetic.hpp"
#include "core/output_file.hpp"
#include "core/result/environment.hpp"
#include "core/result/json_file.hpp"
#include "core/run_config.hpp"
#include "core/text.hpp"

namespace decodebench::app {

namespace {

struct MakeGgufFlags {
  RunOptions options;  // only the model fields are used
  std::string out;
  std::string name;
  std::optional<int64_t> threads;  ///< unset: all hardware threads
  bool quiet = false;
  CLI::Option* tied = nullptr;
  CLI::Option* untied = nullptr;
  CLI::Option* qkv_bias = nullptr;
  CLI::Option* no_qkv_bias = nullptr;
};

void run_make_gguf(MakeGgufFlags& f) {
  RunOptions& o = f.options;
  if (f.tied->count() && f.untied->count()) {
    throw usage_error("--tied-embeddings and --untied are exclusive");
  }
  if (f.tied->count() || f.untied->count()) o.tied_embeddings = f.tied->count() > 0;
  if (f.qkv_bias->count() && f.no_qkv_bias->count()) {
    throw usage_error("--qkv-bias and --no-qkv-bias are exclusive");
  }
  if (f.qkv_bias->count() || f.no_qkv_bias->count()) o.qkv_bias = f.qkv_bias->count() > 0;
  // The shape resolves as for a run; a one-token decode keeps the context check out of the way.
  o.prompt_tokens = 1;
  o.tokens = 1;
  o.warmup = 0;
  o.backend = "cpu";
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (f.threads) check_thread_count(*f.threads);
  const RunConfig config = resolve_run_config(o, hw);
  check_destination(f.out, "--out");
  if (writes_to_stdout(f.out)) throw usage_error("--out: a GGUF file cannot go to stdout");

  GgufExportInfo info;
  info.scheme = config.dtype;
  info.preset = config.preset;
  info.seed = config.seed;
  info.name = !f.name.empty() ? f.name
                              : fmt::format("decodebench synthetic {} {} seed {}", config.preset,
                                            config.dtype.flag_name(), config.seed);
  if (!f.quiet) {
    fmt::print(
        "generating {} weights ({}, {} {}, hidden {}, vocab {}, seed {}): {}\n",
        config.dtype.label(), config.preset, config.shape.n_layers,
        config.shape.n_layers == 1 ? "layer" : "layers", config.shape.hidden, config.shape.vocab,
        config.seed,
        decimal_bytes(static_cast<uint64_t>(synthetic_weight_bytes(config.shape, config.dtype))));
    flush_output(stdout);
  }
  // The whole model is generated in host memory before it is written.
  check_host_memory(synthetic_weight_bytes(config.shape, config.dtype), "generating the weights");
  cpu::ThreadPool pool(f.threads ? static_cast<int>(*f.threads) : hw);
  const Model model = make_synthetic_model(config.shape, config.dtype, config.seed, pool);
  write_synthetic_gguf(model, info, f.out);
  if (!f.quiet) {
    // A regular file (also one written through stderr's descriptor, `2>FILE`) is read back and
    // checked; a character device or FIFO (/dev/null, a pipe) cannot be, and is not an error
    // either way (-q or not).
    std::error_code ec;
    if (std::filesystem::is_regular_file(f.out, ec)) {
      const gguf::Reader check(f.out);  // re-validate what was written
      fmt::print("wrote {} ({}, {}, {} tensors, {})\n", f.out, gguf_architecture_for(model.config),
                 config.dtype.label(), check.tensors().size(), decimal_bytes(check.file_size()));
    } else {
      fmt::print("wrote {} ({}, {}; not a regular file, so not read back)\n", f.out,
                 gguf_architecture_for(model.config), config.dtype.label());
    }
  }
}

}  // namespace

void setup_make_gguf(CLI::App& app) {
  auto f = std::make_shared<MakeGgufFlags>();
  RunOptions& o = f->options;
  CLI::App* cmd = app.add_subcommand(
      "make-gguf", "Write a synthetic model (shape flags, --dtype, --seed) as a GGUF file");
  cmd->add_option("--preset", o.preset,
                  "Shape preset: qwen2.5-7b [default], qwen2.5-0.5b, llama-3-8b, smollm2-135m, or "
                  "a preset .json");
  cmd->add_option("--layers", o.layers, "Transformer layers");
  cmd->add_option("--hidden", o.hidden, "Hidden size D");
  cmd->add_option("--heads", o.heads, "Query heads");
  cmd->add_option("--kv-heads", o.kv_heads, "Key/value heads (GQA); divides --heads");
  cmd->add_option("--head-dim", o.head_dim, "Head dimension (even); default hidden/heads");
  cmd->add_option("--ffn", o.ffn, "FFN inner size");
  cmd->add_option("--vocab", o.vocab, "Vocabulary size (>= 2)");
  cmd->add_option("--context", o.context_length, "Context length recorded in the file");
  cmd->add_option("--rope-theta", o.rope_theta, "RoPE base theta (stored as f32)");
  cmd->add_option("--rms-eps", o.rms_eps, "RMSNorm epsilon (stored as f32)");
  f->tied = cmd->add_flag("--tied-embeddings")->description("LM head shares the embedding matrix");
  f->untied = cmd->add_flag("--untied")->description("Separate LM head matrix");
  f->qkv_bias = cmd->add_flag("--qkv-bias")->description("Q/K/V biases (written as a qwen2 model)");
  f->no_qkv_bias =
      cmd->add_flag("--no-qkv-bias")->description("No Q/K/V biases (written as a llama model)");
  cmd->add_option("--dtype", o.dtype,
                  "Weight storage: f32 | f16 | bf16 (default) | q8_0 | q4_0 | q4_1 | q5_0 | q5_1 | "
                  "q4_k | q5_k | q6_k | q4_k_m");
  cmd->add_option("--seed", o.seed, "Seed of the synthetic weights (default 0)");
  cmd->add_option("--out", f->out, "GGUF file to write (replaced atomically)")->required();
  cmd->add_option("--name", f->name, "general.name (default: a description of the model)");
  cmd->add_option("--threads", f->threads, "Threads generating the weights (default: all)");
  cmd->add_flag("-q,--quiet", f->quiet, "Print nothing but errors");
  cmd->footer(
      "The file holds the weights of the synthetic run with the same shape, --dtype and --seed "
      "(`decodebench --model FILE --seed S --prompt-tokens N --ignore-eos` decodes the same "
      "tokens as the synthetic run), llama or qwen2 metadata (qwen2 when the shape has Q/K/V "
      "biases), and a filler gpt2 tokenizer: one token per ASCII byte (stored in gpt2's "
      "byte-to-character form, e.g. byte 0 as U+0100), then <tN> tokens, the "
      "last id <|endoftext|> as BOS/EOS.\n");
  cmd->callback([f] { run_make_gguf(*f); });
}

}  // namespace decodebench::app
