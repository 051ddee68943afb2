#include "app/commands/run.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <thread>

#include "app/report/progress.hpp"
#include "app/report/terminal.hpp"
#include "app/report/text.hpp"
#include "core/output_file.hpp"
#include "core/result/json_file.hpp"
#include "core/runner.hpp"

namespace decodebench::app {

void add_run_flags(CLI::App& app, RunFlags& f) {
  RunOptions& o = f.options;
  const std::string model = "Model";
  app.add_option("--preset", o.preset,
                 "Synthetic shape preset: a name (qwen2.5-7b [default], qwen2.5-0.5b, llama-3-8b, "
                 "smollm2-135m) or a path to a preset .json")
      ->group(model);
  app.add_option("--model", o.model_path, "GGUF model file (llama, qwen2, qwen3)")->group(model);
  const std::string shape = "Synthetic shape (override the preset)";
  app.add_option("--layers", o.layers, "Transformer layers")->group(shape);
  app.add_option("--hidden", o.hidden, "Hidden size D")->group(shape);
  app.add_option("--heads", o.heads, "Query heads")->group(shape);
  app.add_option("--kv-heads", o.kv_heads, "Key/value heads (GQA); divides --heads")->group(shape);
  app.add_option("--head-dim", o.head_dim, "Head dimension (even); default hidden/heads")
      ->group(shape);
  app.add_option("--ffn", o.ffn, "FFN inner size")->group(shape);
  app.add_option("--vocab", o.vocab, "Vocabulary size (>= 2)")->group(shape);
  app.add_option("--context", o.context_length, "Context limit in positions")->group(shape);
  app.add_option("--rope-theta", o.rope_theta, "RoPE base theta")->group(shape);
  app.add_option("--rms-eps", o.rms_eps, "RMSNorm epsilon")->group(shape);
  f.tied = app.add_flag("--tied-embeddings")
               ->description("LM head shares the embedding matrix")
               ->group(shape);
  f.untied = app.add_flag("--untied")->description("Separate LM head matrix")->group(shape);
  f.qkv_bias = app.add_flag("--qkv-bias")
                   ->description("Q/K/V projections carry a bias (Qwen2)")
                   ->group(shape);
  f.no_qkv_bias = app.add_flag("--no-qkv-bias")->description("No Q/K/V bias")->group(shape);
  app.add_option("--dtype", o.dtype,
                 "Weight storage: f32 | f16 | bf16 (default) | q8_0 | q4_0 | q4_1 | q5_0 | q5_1 | "
                 "q4_k | q5_k | q6_k | q4_k_m (Q4_K, with Q6_K for the LM head and for attn_v and "
                 "ffn_down in some layers)")
      ->group(shape);
  app.add_option("--seed", o.seed, "Seed of the synthetic weights and prompt (default 0)")
      ->group(shape);

  const std::string decode = "Prompt and decode";
  app.add_option("--prompt-tokens", o.prompt_tokens,
                 "Prompt length filled by prefill before timing (default 32; ids from --seed)")
      ->group(decode);
  app.add_option("--prompt-ids", o.prompt_ids, "Explicit prompt token ids, e.g. 1,2,3")
      ->group(decode);
  app.add_option("--prompt", o.prompt, "Prompt text (GGUF models; encoded by its tokenizer)")
      ->group(decode);
  app.add_option("--tokens", o.tokens, "Decode steps timed (default 64)")->group(decode);
  app.add_option("--warmup", o.warmup, "Untimed decode steps before timing (default 4)")
      ->group(decode);
  app.add_option("--warmup-time", o.warmup_time,
                 "Warm up for at least S seconds as well (the steps cycle over the warm-up "
                 "positions): a GPU's first ~0.5 s of load can run at other clocks than later "
                 "(default 0)")
      ->group(decode);
  f.ignore_eos = app.add_flag("--ignore-eos")
                     ->description(
                         "Do not stop at an end-of-generation token (a run whose first token "
                         "after the prompt is one does so anyway, with a warning)")
                     ->group(decode);
  f.stateless = app.add_flag("--stateless")
                    ->description(
                        "Debug: every step at position 0 with seq_len 1 (isolates KV-cache "
                        "and position bugs)")
                    ->group(decode);
  app.add_option("--batch", o.batch,
                 "Sequences decoded in lockstep, 1..256 (default 1), each with its own prompt, "
                 "position and KV cache; every sequence decodes exactly --tokens tokens (no EOS "
                 "stop). A list (1,2,4,8) prints a scaling table")
      ->group(decode);

  const std::string exec = "Execution";
  app.add_option("--backend", o.backend, "auto | cpu | cuda (default auto: cuda when a GPU exists)")
      ->group(exec);
  app.add_option("--threads", o.threads, "CPU threads (default: all hardware threads)")
      ->group(exec);
  app.add_option("--graph", o.graph,
                 "CUDA graph: auto (graph, else eager with a warning) | on | off | both (eager and "
                 "graph on identical inputs, tokens compared)")
      ->group(exec);
  app.add_option("--capture-mode", o.capture_mode,
                 "Stream capture mode: thread_local (default) | global | relaxed")
      ->group(exec);
  app.add_option("--inject-capture-fault", o.inject_capture_fault,
                 "Make an illegal call inside the capture to exercise recovery: alloc | "
                 "legacy-sync | host-sync | event-query | device-sync")
      ->group(exec);
  app.add_option("--fusion", o.fusion,
                 "CUDA kernel fusion (norm inside GEMVs, stacked QKV and gate/up, SwiGLU inside "
                 "the gate/up or down GEMV, RoPE with the KV append): on (default) | off")
      ->group(exec);
  app.add_option("--pdl", o.pdl,
                 "CUDA programmatic dependent launch (kernels overlap their start with the "
                 "previous kernel's end): on (default) | off")
      ->group(exec);
  app.add_option("--launch-ahead", o.launch_ahead,
                 "Graph passes at batch 1: launch each step before the previous step's token "
                 "reaches the host (the device passes the token on), so the GPU does not wait "
                 "for the host between steps: on (default) | off (one step at a time, as are "
                 "eager passes and passes with phase timing, verification or --stateless)")
      ->group(exec);
  app.add_option("--weight-layout", o.weight_layout,
                 "CUDA device layout of large quantized matrices at batch 1: auto (default: tiled "
                 "for Q8_0, and for Q4_0 and Q6_K on sm_90) | tiled (codes in aligned pieces: "
                 "Q4_0, Q4_1, Q8_0, Q4_K, and Q6_K on sm_90) | gguf (the file's blocks, read by "
                 "the stream kernel)")
      ->group(exec);
  f.phase_timing = app.add_flag("--phase-timing")
                       ->description(
                           "Per-token phases (h2d, launch, wait, argmax) with CUDA-event GPU "
                           "time; adds synchronisation, measured and reported")
                       ->group(exec);

  const std::string stopping = "Stopping rules";
  app.add_option("--min-time", o.min_time,
                 "Repeat rounds of --tokens steps (same positions and tokens) until at least S "
                 "seconds of steps are timed")
      ->group(stopping);
  app.add_option("--max-noise", o.max_noise,
                 "Repeat rounds until the median TPOT's relative noise (95% CI half-width / "
                 "median) is at most PCT percent (5 or 5%), or --max-time is spent (0 = off, "
                 "the default)")
      // "5%" as compare --threshold takes it: the sign is dropped before the number is read.
      ->transform(
          [](std::string v) {
            // Only one sign: "5%%" stays as typed, and the error names it so.
            if (!v.empty() && v.back() == '%' && v.find('%') == v.size() - 1) v.pop_back();
            return v;
          },
          "", "percent")
      ->group(stopping);
  app.add_option("--max-time", o.max_time,
                 "Wall-clock budget of the repetition in seconds (default 30)")
      ->group(stopping);

  const std::string verify = "Verification";
  f.verify_argmax = app.add_flag("--verify-argmax")
                        ->description(
                            "Every step: download the logits and check the argmax on the CPU "
                            "(mismatch: exit 4)")
                        ->group(verify);
  app.add_option("--verify", o.verify,
                 "Compare GPU logits with the CPU backend for the first N steps (off unless given; "
                 "N defaults to 8 when the flag has no value)")
      ->expected(0, 1)
      ->default_str("8")
      ->option_text("[N]")  // "INT=8" would read as a default that applies without the flag
      ->group(verify);
  f.keep_going = app.add_flag("--keep-going")
                     ->description(
                         "Continue after a verification failure (exit 4 at "
                         "the end)")
                     ->group(verify);

  const std::string out = "Output";
  app.add_option("--json", o.json_path, "Write the result JSON to PATH ('-' = stdout)")->group(out);
  CLI::Option* quiet =
      app.add_flag("-q,--quiet", f.quiet, "Print nothing but warnings and errors (stderr)")
          ->group(out);
  app.add_flag("-v,--verbose", f.verbose, "Print progress and error details")
      ->group(out)
      ->excludes(quiet);
}

void bind_flags(RunFlags& f) {
  RunOptions& o = f.options;
  if (f.tied->count() && f.untied->count()) {
    throw usage_error("--tied-embeddings and --untied are exclusive");
  }
  if (f.tied->count()) o.tied_embeddings = true;
  if (f.untied->count()) o.tied_embeddings = false;
  if (f.qkv_bias->count() && f.no_qkv_bias->count()) {
    throw usage_error("--qkv-bias and --no-qkv-bias are exclusive");
  }
  if (f.qkv_bias->count()) o.qkv_bias = true;
  if (f.no_qkv_bias->count()) o.qkv_bias = false;
  if (f.ignore_eos->count()) o.ignore_eos = true;
  if (f.stateless->count()) o.stateless = true;
  if (f.phase_timing->count()) o.phase_timing = true;
  if (f.verify_argmax->count()) o.verify_argmax = true;
  if (f.keep_going->count()) o.keep_going = true;
}

int run_command(RunFlags& f) {
  bind_flags(f);
  const int hw = std::max(1u, std::thread::hardware_concurrency());
  const RunConfig config = resolve_run_config(f.options, static_cast<int>(hw));
  if (!config.json_path.empty()) {
    check_json_destination(config.json_path);
    check_not_an_input(config.json_path, "--json",
                       run_input_files(config.model_path, config.preset));
  }
  // With --json - the report goes to stderr so that stdout holds only the JSON document.
  FILE* report_stream = writes_to_stdout(config.json_path) ? stderr : stdout;
  ProgressFn progress;
  if (f.verbose) progress = [](const std::string& s) { spdlog::info("{}", s); };
  ProgressBar bar(!f.quiet);
  RunCallbacks callbacks;
  callbacks.progress = progress;
  callbacks.step = [&bar](const std::string& label, int64_t done, int64_t total) {
    bar.update(label, done, total);
  };
  // Warnings go to stderr the moment they arise, even with --quiet: they change what the figures
  // mean (e.g. the CPU fallback of backend auto).
  callbacks.warning = [&bar](const std::string& w) {
    bar.clear();
    std::fprintf(stderr, "decodebench: warning: %s\n", printable_message(w).c_str());
  };
  const RunReport report = execute_run(config, callbacks);
  bar.clear();
  if (!f.quiet) print_run_report(report, report_stream, isatty(fileno(report_stream)) != 0);
  if (!config.json_path.empty()) {
    write_json_file(config.json_path, result_json(report));
    if (!f.quiet && config.json_path != "-") {
      std::fprintf(stderr, "decodebench: wrote %s\n", config.json_path.c_str());
    }
  }
  return static_cast<int>(report.exit_code);
}

}  // namespace decodebench::app
