#include "core/decode/decode_loop.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "core/cpu/ops.hpp"
#include "core/error.hpp"
#include "core/stats/statistics.hpp"

namespace decodebench {

std::vector<std::pair<int32_t, float>> top_k(const std::vector<float>& logits, int k) {
  std::vector<int32_t> idx(logits.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int32_t>(i);
  const size_t n = std::min<size_t>(static_cast<size_t>(k), idx.size());
  // NaN sorts first, as it wins the argmax.
  const auto greater = [&](int32_t a, int32_t b) {
    const float x = logits[a], y = logits[b];
    if (std::isnan(x) != std::isnan(y)) return std::isnan(x);
    if (x != y && !std::isnan(x)) return x > y;
    return a < b;
  };
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(n), idx.end(), greater);
  std::vector<std::pair<int32_t, float>> out;
  for (size_t i = 0; i < n; ++i) out.emplace_back(idx[i], logits[idx[i]]);
  return out;
}

namespace {

int64_t ns_between(std::chrono::steady_clock::time_point a,
                   std::chrono::steady_clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count();
}

float margin_of(const std::vector<float>& logits) {
  const auto top = top_k(logits, 2);
  return top.size() < 2 ? 0.0f : top[0].second - top[1].second;
}

void check_argmax(PassResult& r, const PassSpec& spec, std::vector<float>& logits, int64_t step,
                  int64_t pos, int32_t id, int64_t sequence = 0) {
  const int32_t cpu_id = cpu::argmax(logits.data(), static_cast<int64_t>(logits.size()));
  ++r.argmax_checked;
  if (cpu_id == id) return;
  ArgmaxMismatch m;
  m.sequence = sequence;
  m.step = step;
  m.position = pos;
  m.backend_id = id;
  m.cpu_id = cpu_id;
  m.backend_logit = id >= 0 && id < static_cast<int32_t>(logits.size()) ? logits[id] : NAN;
  m.cpu_logit = logits[cpu_id];
  m.margin = margin_of(logits);
  m.top10 = top_k(logits, 10);
  r.argmax_mismatches.push_back(m);
  if (!spec.keep_going) {
    std::string top;
    for (const auto& [tid, v] : m.top10) top += " " + std::to_string(tid) + ":" + std::to_string(v);
    const std::string where = spec.batch > 1 ? " of sequence " + std::to_string(sequence) + " of " +
                                                   std::to_string(spec.batch)
                                             : std::string();
    throw Error(ExitCode::kVerification,
                "argmax mismatch at step " + std::to_string(step) + where + " (position " +
                    std::to_string(pos) + "): " + spec.label + " chose " + std::to_string(id) +
                    " (logit " + std::to_string(m.backend_logit) + "), CPU argmax of the same " +
                    "logits is " + std::to_string(cpu_id) + " (logit " +
                    std::to_string(m.cpu_logit) + "), margin to runner-up " +
                    std::to_string(m.margin) + "; top 10:" + top +
                    " (use --keep-going to continue)");
  }
}

LogitsCheck compare_logits(const std::vector<float>& got, const std::vector<float>& ref,
                           int64_t step, int32_t got_id, int32_t ref_id, int64_t sequence = 0) {
  LogitsCheck c;
  c.sequence = sequence;
  c.step = step;
  double max_ref = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(static_cast<double>(got[i]) - ref[i]);
    if (!(d <= c.max_abs_error)) c.max_abs_error = std::isnan(d) ? INFINITY : d;
    max_ref = std::max(max_ref, std::fabs(static_cast<double>(ref[i])));
  }
  c.max_rel_error = max_ref > 0 ? c.max_abs_error / max_ref : c.max_abs_error;
  c.backend_id = got_id;
  c.reference_id = ref_id;
  c.argmax_agrees = got_id == ref_id;
  const auto ref_top = top_k(ref, 2);
  c.reference_top = ref_top.empty() ? 0.0f : ref_top[0].second;
  c.reference_margin = margin_of(ref);
  c.backend_margin = margin_of(got);
  return c;
}

// After round `round`: records the round in r.stopping and says whether the pass is done (the
// rule that stopped it is then in r.stopping.rule).
// Whether the warm-up goes on after `done` steps begun at `t0`.
bool warming_up(const PassSpec& spec, int64_t done, std::chrono::steady_clock::time_point t0) {
  if (done < spec.warmup) return true;
  return spec.warmup_time_s > 0 &&
         std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() <
             spec.warmup_time_s;
}

// Wall time of the repetition: since the end of round 0 (`rep0`, set there), so the first round's
// verification (CPU reference steps, seconds each for a 7B model) does not spend the budget.
int64_t repeat_wall_ns(int64_t round, std::chrono::steady_clock::time_point& rep0) {
  const auto now = std::chrono::steady_clock::now();
  if (round == 0) rep0 = now;
  return ns_between(rep0, now);
}

// Per-round telemetry (PassSpec::telemetry): a reading before the first timed round, then one
// after each round, whose differences RoundTelemetry records with the round's step times.
class RoundMeter {
 public:
  explicit RoundMeter(GpuTelemetry* source) : source_(source) {
    if (source_ != nullptr) begin_ = source_->read();
    t_ = std::chrono::steady_clock::now();
  }
  // Call when a round begins: its first step will be r.samples_ns[first].
  void start_round(size_t first) { first_ = first; }
  // Call when round `round` ends (before round_finishes_pass); `verified`: it checked steps
  // between its timed steps (RoundTelemetry::verified).
  void end_round(PassResult& r, int64_t round, bool verified) {
    if (source_ == nullptr) return;
    const GpuReading now = source_->read();
    const auto t = std::chrono::steady_clock::now();
    const std::vector<int64_t> steps(r.samples_ns.begin() + static_cast<std::ptrdiff_t>(first_),
                                     r.samples_ns.end());
    r.telemetry.push_back(
        round_telemetry(round, steps, static_cast<double>(ns_between(t_, t)) * 1e-9, begin_, now));
    r.telemetry.back().verified = verified;
    begin_ = now;
    t_ = t;
  }

 private:
  GpuTelemetry* source_;
  GpuReading begin_;
  std::chrono::steady_clock::time_point t_;
  size_t first_ = 0;
};

// `wall_ns`: the repetition's wall time (repeat_wall_ns).
bool round_finishes_pass(PassResult& r, const PassSpec& spec, int64_t round, int64_t timed_ns,
                         int64_t wall_ns) {
  r.stopping.rounds = round + 1;
  r.stopping.timed_s = static_cast<double>(timed_ns) * 1e-9;
  const auto noise = [&] {
    std::vector<double> samples(r.samples_ns.begin(), r.samples_ns.end());
    return summarize(samples).median_noise();
  };
  const auto done = [&](const char* rule) {
    r.stopping.rule = rule;
    if (spec.max_noise <= 0) r.stopping.median_noise = noise();  // else current
    return true;
  };
  // Sorting every sample after every round costs O(n log n) a round: only the noise rule needs
  // it before the pass ends.
  if (spec.max_noise > 0) r.stopping.median_noise = noise();
  if (r.stopped_at_end_of_generation) return done("eos");
  const bool time_ok = r.stopping.timed_s >= spec.min_time_s;
  // Below kMinSamplesForMedianCi samples there is no 95% interval to judge the noise by.
  const bool noise_ok =
      spec.max_noise <= 0 || (static_cast<int64_t>(r.samples_ns.size()) >= kMinSamplesForMedianCi &&
                              r.stopping.median_noise <= spec.max_noise);
  if (time_ok && noise_ok) {
    return done(spec.max_noise > 0 ? "noise" : (spec.min_time_s > 0 ? "min_time" : "tokens"));
  }
  if (time_ok && static_cast<double>(wall_ns) * 1e-9 >= spec.max_time_s) {
    return done("time_budget");
  }
  return false;
}

/// Appends the idle times of one round that count: series[j] is the GPU's idle time before the
/// round's step j + 1, and counts[j] says whether nothing but the loop's own bookkeeping ran
/// after step j. A round of n steps has n − 1 gaps; a shorter series is its prefix (a backend's
/// capacity, in step order), a longer one means gaps of other work (stray stamps, a series not
/// begun), which cannot be matched to steps: then the round gives none.
void append_counted_idle(std::vector<int64_t>& out, const std::vector<int64_t>& series,
                         const std::vector<bool>& counts) {
  if (counts.empty() || series.size() > counts.size() - 1) return;
  for (size_t j = 0; j < series.size(); ++j) {
    if (counts[j]) out.push_back(series[j]);
  }
}

// Why a batch-1 pass asked to launch steps ahead cannot (PassSpec::launch_ahead), or "".
std::string launch_ahead_obstacle(const Backend& backend, const PassSpec& spec,
                                  const ExecReport& exec) {
  if (spec.phase_timing) return "phase timing synchronises inside each step";
  if (spec.verify_argmax || (spec.reference != nullptr && spec.verify_tokens > 0)) {
    // Its later rounds too, so that every round of the pass times the same thing.
    return "verification reads the first round's logits after each step, so the whole pass runs "
           "one step at a time";
  }
  if (spec.stateless) return "--stateless runs every step at position 0";
  // A graph pass that fell back to eager: see PassSpec::launch_ahead on eager steps.
  if (spec.mode == ExecMode::kGraph && !exec.captured) {
    return "the graph capture failed and the steps run eagerly";
  }
  return backend.launch_ahead_unavailable();
}

// The steps of run_launched_ahead_round; `in_flight` counts the steps enqueued and not finished.
void run_launched_ahead_steps(Backend& backend, const PassSpec& spec, PassResult& r,
                              int64_t& timed_ns, bool first_round, std::vector<bool>& counts,
                              int& in_flight) {
  const auto pos_of = [&](int64_t i) { return spec.start_pos + i; };
  auto t_prev = std::chrono::steady_clock::now();
  backend.enqueue_step(spec.first_token, pos_of(0));
  ++in_flight;
  for (int64_t i = 0; i < spec.tokens; ++i) {
    const bool more = i + 1 < spec.tokens;
    if (more) {
      backend.enqueue_step(kTokenOnDevice, pos_of(i + 1));
      ++in_flight;
    }
    const int32_t next = backend.finish_step();
    --in_flight;
    const auto t = std::chrono::steady_clock::now();
    r.samples_ns.push_back(ns_between(t_prev, t));
    timed_ns += r.samples_ns.back();
    t_prev = t;
    if (spec.measure_idle) counts.push_back(true);
    if (spec.on_step) spec.on_step(i + 1, spec.tokens);
    if (first_round) r.ids.push_back(next);
    if (spec.is_end_of_generation && spec.is_end_of_generation(next)) {
      r.stopped_at_end_of_generation = true;
      if (more) {
        backend.finish_step();  // launched ahead, not wanted: its gap was idle time all the same
        --in_flight;
        if (spec.measure_idle) counts.push_back(true);
      }
      return;
    }
  }
}

// One round of PassSpec::tokens launch-ahead steps (PassSpec::launch_ahead): step i + 1 is
// enqueued before step i's token is awaited. Sample i = the time between the host's receipts of
// tokens i − 1 and i (sample 0 from step 0's launch). At an end-of-generation token the step
// already in flight is finished and dropped. Every idle gap counts (nothing is verified).
void run_launched_ahead_round(Backend& backend, const PassSpec& spec, PassResult& r,
                              int64_t& timed_ns, bool first_round, std::vector<bool>& counts) {
  if (spec.tokens <= 0) return;
  // Steps enqueued and not yet finished: drained if anything throws, so the backend is left with
  // none in flight and its next call reports its own error, not this one's leftovers.
  int in_flight = 0;
  try {
    run_launched_ahead_steps(backend, spec, r, timed_ns, first_round, counts, in_flight);
  } catch (...) {
    for (; in_flight > 0; --in_flight) {
      try {
        backend.finish_step();
      } catch (...) {  // the first error is the one to report
      }
    }
    throw;
  }
}

// --graph on: a failed capture is the pass's error at once, before warm-up and timing.
void require_capture(const PassSpec& spec, const ExecReport& exec) {
  if (spec.require_graph && spec.mode == ExecMode::kGraph && !exec.captured) {
    throw runtime_error(capture_failure_text(exec));
  }
}

// run_pass for batch > 1: step_batch in lockstep, every sequence at the same position.
PassResult run_batch_pass(Backend& backend, const PassSpec& spec) {
  const int64_t m = spec.batch;
  if (m < 1 || static_cast<int64_t>(spec.first_tokens.size()) != m) {
    throw usage_error("a batched pass of " + std::to_string(m) + " sequences needs " +
                      std::to_string(m) + " first tokens, got " +
                      std::to_string(spec.first_tokens.size()));
  }
  PassResult r;
  r.spec = spec;
  r.exec = backend.set_exec_mode_batch(spec.mode, m);
  require_capture(spec, r.exec);
  const auto pos_of = [&](int64_t i) { return spec.stateless ? 0 : spec.start_pos + i; };
  const auto n = static_cast<size_t>(m);
  std::vector<int32_t> tokens = spec.first_tokens, next(n), ref_next(n);
  std::vector<int64_t> positions(n);

  const int64_t cycle = std::max<int64_t>({spec.warmup, spec.tokens, 1});
  const auto warm0 = std::chrono::steady_clock::now();
  for (; warming_up(spec, r.warmup_steps, warm0); ++r.warmup_steps) {
    std::fill(positions.begin(), positions.end(), pos_of(r.warmup_steps % cycle));
    backend.step_batch(tokens, positions, next, nullptr);
    tokens.swap(next);
  }

  std::vector<float> logits, ref_logits;
  const bool check_reference = spec.reference != nullptr && spec.verify_tokens > 0;
  const bool verifies = spec.verify_argmax || check_reference;  // in the first round only
  r.sequence_ids.assign(n, {});
  for (auto& ids : r.sequence_ids) ids.reserve(static_cast<size_t>(spec.tokens + 1));
  r.samples_ns.reserve(static_cast<size_t>(spec.tokens));
  RoundMeter meter(spec.telemetry);  // its first reading, before the timed steps
  const auto wall0 = std::chrono::steady_clock::now();
  auto rep0 = wall0;  // end of round 0 (repeat_wall_ns)
  int64_t timed_ns = 0;
  for (int64_t round = 0;; ++round) {
    const bool first_round = round == 0;
    meter.start_round(r.samples_ns.size());
    tokens = spec.first_tokens;
    if (first_round) {
      for (size_t s = 0; s < n; ++s) r.sequence_ids[s].push_back(tokens[s]);
    }
    for (int64_t i = 0; i < spec.tokens; ++i) {
      const int64_t pos = pos_of(i);
      std::fill(positions.begin(), positions.end(), pos);
      StepPhases phases;
      const auto t0 = std::chrono::steady_clock::now();
      backend.step_batch(tokens, positions, next, spec.phase_timing ? &phases : nullptr);
      const auto t1 = std::chrono::steady_clock::now();
      r.samples_ns.push_back(ns_between(t0, t1));
      timed_ns += r.samples_ns.back();
      if (spec.phase_timing) r.phases.push_back(phases);
      // Verification happens outside the timed interval, in the first round only.
      if (first_round && spec.verify_argmax) {
        for (int64_t s = 0; s < m; ++s) {
          backend.logits_batch(s, logits);
          check_argmax(r, spec, logits, i, pos, next[s], s);
        }
      }
      if (first_round && check_reference && i < spec.verify_tokens) {
        spec.reference->step_batch(tokens, positions, ref_next, nullptr);
        for (int64_t s = 0; s < m; ++s) {
          backend.logits_batch(s, logits);
          spec.reference->logits_batch(s, ref_logits);
          r.logits_checks.push_back(compare_logits(logits, ref_logits, i, next[s], ref_next[s], s));
        }
      }
      if (spec.on_step) spec.on_step(i + 1, spec.tokens);
      if (first_round) {
        for (size_t s = 0; s < n; ++s) r.sequence_ids[s].push_back(next[s]);
      }
      tokens.swap(next);
    }
    meter.end_round(r, round, first_round && verifies);
    if (round_finishes_pass(r, spec, round, timed_ns, repeat_wall_ns(round, rep0))) break;
  }
  r.ids = r.sequence_ids.front();
  r.wall_ns = ns_between(wall0, std::chrono::steady_clock::now());
  return r;
}

}  // namespace

std::string capture_failure_text(const ExecReport& exec) {
  return "graph capture failed: " + exec.failed_call + " failed with " + exec.error_name + " (" +
         exec.error_message + "); the context recovered (use --graph auto to fall back to eager)";
}

PassResult run_pass(Backend& backend, const PassSpec& spec) {
  if (spec.batch != 1) return run_batch_pass(backend, spec);
  PassResult r;
  r.spec = spec;
  r.exec = backend.set_exec_mode(spec.mode);
  require_capture(spec, r.exec);
  const auto pos_of = [&](int64_t i) { return spec.stateless ? 0 : spec.start_pos + i; };

  int32_t token = spec.first_token;
  const int64_t cycle = std::max<int64_t>({spec.warmup, spec.tokens, 1});
  const auto warm0 = std::chrono::steady_clock::now();
  for (; warming_up(spec, r.warmup_steps, warm0); ++r.warmup_steps) {
    token = backend.step(token, pos_of(r.warmup_steps % cycle), nullptr);
  }

  std::vector<float> logits, ref_logits;
  const bool check_reference = spec.reference != nullptr && spec.verify_tokens > 0;
  const bool verifies = spec.verify_argmax || check_reference;  // in the first round only
  r.ids.reserve(static_cast<size_t>(spec.tokens + 1));
  r.samples_ns.reserve(static_cast<size_t>(spec.tokens));
  RoundMeter meter(spec.telemetry);  // its first reading, before the timed steps
  const auto wall0 = std::chrono::steady_clock::now();
  auto rep0 = wall0;  // end of round 0 (repeat_wall_ns)
  int64_t timed_ns = 0;
  // Not for a graph pass that fell back to eager: there the GPU also waits inside the step for
  // each launch, which no gap between steps shows.
  const bool measure_idle = spec.measure_idle && (spec.mode != ExecMode::kGraph || r.exec.captured);
  r.launch_ahead_off = spec.launch_ahead ? launch_ahead_obstacle(backend, spec, r.exec) : "";
  r.launched_ahead = spec.launch_ahead && r.launch_ahead_off.empty();
  for (int64_t round = 0;; ++round) {
    const bool first_round = round == 0;
    meter.start_round(r.samples_ns.size());
    token = spec.first_token;
    if (first_round) r.ids.push_back(token);
    // counts[j]: whether the idle time before step j + 1 of this round counts
    // (append_counted_idle).
    std::vector<bool> counts;
    if (measure_idle) {
      backend.begin_idle_series();
      counts.reserve(static_cast<size_t>(spec.tokens));
    }
    if (r.launched_ahead) {
      run_launched_ahead_round(backend, spec, r, timed_ns, first_round, counts);
      if (measure_idle) append_counted_idle(r.idle_ns, backend.idle_series_ns(), counts);
      meter.end_round(r, round, first_round && verifies);
      if (round_finishes_pass(r, spec, round, timed_ns, repeat_wall_ns(round, rep0))) break;
      continue;
    }
    int64_t i = 0;
    for (; i < spec.tokens; ++i) {
      const int64_t pos = pos_of(i);
      StepPhases phases;
      const auto t0 = std::chrono::steady_clock::now();
      const int32_t next = backend.step(token, pos, spec.phase_timing ? &phases : nullptr);
      const auto t1 = std::chrono::steady_clock::now();
      r.samples_ns.push_back(ns_between(t0, t1));
      timed_ns += r.samples_ns.back();
      if (spec.phase_timing) r.phases.push_back(phases);
      // Verification happens outside the timed interval, in the first round only.
      bool verified = false;
      if (first_round && spec.verify_argmax) {
        backend.logits(logits);
        check_argmax(r, spec, logits, i, pos, next);
        verified = true;
      }
      if (first_round && check_reference && i < spec.verify_tokens) {
        const int32_t ref_id = spec.reference->step(token, pos, nullptr);
        backend.logits(logits);
        spec.reference->logits(ref_logits);
        r.logits_checks.push_back(compare_logits(logits, ref_logits, i, next, ref_id));
        verified = true;
      }
      if (measure_idle) counts.push_back(!verified);
      if (spec.on_step) spec.on_step(i + 1, spec.tokens);
      if (first_round) r.ids.push_back(next);
      token = next;
      if (spec.is_end_of_generation && spec.is_end_of_generation(next)) {
        r.stopped_at_end_of_generation = true;
        break;
      }
    }
    if (measure_idle) append_counted_idle(r.idle_ns, backend.idle_series_ns(), counts);
    meter.end_round(r, round, first_round && verifies);
    if (round_finishes_pass(r, spec, round, timed_ns, repeat_wall_ns(round, rep0))) break;
  }
  r.sequence_ids = {r.ids};
  r.wall_ns = ns_between(wall0, std::chrono::steady_clock::now());
  if (spec.gpu_step_replays > 0 && r.ids.size() > 1) {
    // The middle timed step (its input is ids[m]): its context is the pass's typical one.
    const int64_t m = static_cast<int64_t>(r.ids.size() - 2) / 2;
    r.gpu_step_position = pos_of(m);
    r.gpu_step_us = backend.replayed_step_gpu_us(r.ids[static_cast<size_t>(m)], r.gpu_step_position,
                                                 spec.gpu_step_replays);
    if (r.gpu_step_us < 0) r.gpu_step_position = -1;
  }
  return r;
}

}  // namespace decodebench
