#include "app/report/compare_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace decodebench::app {

namespace {

const MetricSpec& spec_of(const std::string& name) {
  for (const MetricSpec& m : compare_metrics()) {
    if (name == m.name) return m;
  }
  return compare_metrics().front();
}

std::string value_text(double v, const MetricSpec& spec) {
  if (std::strcmp(spec.unit, "ns") == 0) return fmt::format("{:.1f} µs", v / 1000.0);
  if (std::strcmp(spec.unit, "ms") == 0) return fmt::format("{:.4f} ms", v);
  return fmt::format("{:.1f} tok/s", v);
}

// `v` with `decimals` to `max_decimals` decimals, then with 3 to 16 significant digits: the first
// text for which `keeps` holds (the shortest round-trip text if none does). `sign`: a '+' on
// positive values.
std::string first_text_that_keeps(double v, int decimals, int max_decimals, bool sign,
                                  const std::function<bool(const std::string&)>& keeps) {
  for (int d = decimals; d <= max_decimals; ++d) {
    const std::string text = sign ? fmt::format("{:+.{}f}", v, d) : fmt::format("{:.{}f}", v, d);
    if (keeps(text)) return text;
  }
  for (int g = 3; g < 17; ++g) {
    const std::string text = sign ? fmt::format("{:+.{}g}", v, g) : fmt::format("{:.{}g}", v, g);
    if (keeps(text)) return text;
  }
  return sign ? fmt::format("{:+}", v) : fmt::format("{}", v);
}

// The change with one decimal, or more where one would put it on the other side of the
// threshold than the verdict did (+4.97% is not "+5.0%" next to a 5% threshold), or, at
// --threshold 0, would show a change as none ("+0.0%" for +0.03%).
std::string change_text(double pct, double threshold) {
  if (!std::isfinite(pct)) return pct > 0 ? "+inf" : "-inf";
  return first_text_that_keeps(pct, 1, 9, true,
                               [&](const std::string& text) {
                                 const double shown = std::fabs(std::stod(text));
                                 return threshold > 0
                                            ? (shown >= threshold) == (std::fabs(pct) >= threshold)
                                            : shown != 0 || pct == 0;
                               }) +
         "%";
}

// p with four decimals, or more where four would put it on the other side of alpha (0.049992 is
// not "0.0500" at alpha 0.05) or show it as 0; "<0.0001" below 1e-4 unless alpha is smaller.
std::string p_text(double p, double alpha) {
  if (p < 1e-4 && alpha >= 1e-4) return "<0.0001";
  return first_text_that_keeps(p, 4, 8, false, [&](const std::string& text) {
    const double shown = std::stod(text);
    return (shown < alpha) == (p < alpha) && (shown != 0 || p == 0);
  });
}

// Which tests gave the p column: the rank test for medians, the bootstrap for the rest.
std::string tests_text(const CompareReport& r) {
  bool rank = false;
  int64_t resamples = 0;
  for (const auto& run : r.runs) {
    for (const auto& m : run.metrics) {
      if (m.bootstrap) {
        resamples = m.resamples;
      } else {
        rank = true;
      }
    }
  }
  const std::string boot = fmt::format(
      "percentile bootstrap ({} resamples) of the change in the mean, p90, p99 or "
      "tokens/s",
      resamples);
  if (rank && resamples > 0) {
    return "p: two-sided Mann-Whitney U test on the per-token samples for a median, " + boot;
  }
  if (resamples > 0) return "p: " + boot;
  return "two-sided Mann-Whitney U test on the per-token samples";
}

std::string settings_line(const CompareReport& r) {
  std::string metrics;
  for (const auto& m : r.options.metrics) metrics += (metrics.empty() ? "" : ", ") + m;
  return fmt::format("metric {} · threshold {}% · alpha {} · {}", metrics, r.options.threshold_pct,
                     r.options.alpha, tests_text(r));
}

struct Row {
  std::string run, metric, baseline, candidate, change, p, verdict;
};

std::vector<Row> rows_of(const CompareReport& r) {
  std::vector<Row> rows;
  for (const auto& run : r.runs) {
    for (const auto& m : run.metrics) {
      const MetricSpec& spec = spec_of(m.metric);
      rows.push_back({run.label, m.metric, value_text(m.baseline, spec),
                      value_text(m.candidate, spec),
                      change_text(m.change_pct, r.options.threshold_pct),
                      p_text(m.p_value, r.options.alpha), verdict_name(m.verdict)});
    }
  }
  return rows;
}

// Display width of UTF-8 text (µ counts as one column).
size_t width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

std::string pad(const std::string& s, size_t w, bool right) {
  const size_t n = width(s);
  const std::string fill(w > n ? w - n : 0, ' ');
  return right ? fill + s : s + fill;
}

std::string md_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\";
    out += c;
  }
  return out;
}

}  // namespace

std::string outcome_line(const CompareReport& r) {
  const int slower = r.count(Verdict::kSlower);
  return fmt::format("{} slower, {} faster, {} same, {} unclear in {} matched run(s) → {}", slower,
                     r.count(Verdict::kFaster), r.count(Verdict::kSame), r.count(Verdict::kUnclear),
                     r.runs.size(), slower > 0 ? "REGRESSION (exit 1)" : "no regression (exit 0)");
}

std::string compare_text(const CompareReport& r) {
  std::string out = fmt::format("decodebench compare: baseline {} → new {}\n{}\n\n",
                                r.baseline_name, r.candidate_name, settings_line(r));
  const std::vector<Row> rows = rows_of(r);
  const Row head = {"run", "metric", "baseline", "new", "change", "p", "verdict"};
  std::vector<size_t> w = {width(head.run),       width(head.metric), width(head.baseline),
                           width(head.candidate), width(head.change), width(head.p)};
  for (const Row& row : rows) {
    w[0] = std::max(w[0], width(row.run));
    w[1] = std::max(w[1], width(row.metric));
    w[2] = std::max(w[2], width(row.baseline));
    w[3] = std::max(w[3], width(row.candidate));
    w[4] = std::max(w[4], width(row.change));
    w[5] = std::max(w[5], width(row.p));
  }
  const auto line = [&](const Row& row) {
    return pad(row.run, w[0], false) + "  " + pad(row.metric, w[1], false) + "  " +
           pad(row.baseline, w[2], true) + "  " + pad(row.candidate, w[3], true) + "  " +
           pad(row.change, w[4], true) + "  " + pad(row.p, w[5], true) + "  " + row.verdict + "\n";
  };
  out += line(head);
  for (const Row& row : rows) out += line(row);
  if (!r.only_in_baseline.empty() || !r.only_in_candidate.empty()) out += "\n";
  for (const auto& id : r.only_in_baseline) out += "only in baseline: " + id + "\n";
  for (const auto& id : r.only_in_candidate) out += "only in new:      " + id + "\n";
  if (!r.notes.empty()) out += "\n";
  for (const auto& n : r.notes) out += "note: " + n + "\n";
  out += "\n" + outcome_line(r) + "\n";
  return out;
}

std::string compare_markdown(const CompareReport& r) {
  const int slower = r.count(Verdict::kSlower);
  std::string out = slower > 0 ? fmt::format("### decodebench: regression ({} slower)\n\n", slower)
                               : std::string("### decodebench: no regression\n\n");
  out += fmt::format("Baseline `{}` → new `{}` · {}.\n\n", r.baseline_name, r.candidate_name,
                     settings_line(r));
  out += "| run | metric | baseline | new | change | p | verdict |\n";
  out += "|---|---|---:|---:|---:|---:|---|\n";
  for (const Row& row : rows_of(r)) {
    const std::string verdict = row.verdict == "slower" ? "**slower**" : row.verdict;
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", md_escape(row.run), row.metric,
                       row.baseline, row.candidate, row.change, row.p, verdict);
  }
  out += "\n" + outcome_line(r) + "\n";
  const size_t unmatched = r.only_in_baseline.size() + r.only_in_candidate.size();
  if (unmatched > 0) {
    out += fmt::format("\n<details><summary>{} unmatched run(s)</summary>\n\n", unmatched);
    for (const auto& id : r.only_in_baseline) out += "- only in baseline: `" + id + "`\n";
    for (const auto& id : r.only_in_candidate) out += "- only in new: `" + id + "`\n";
    out += "\n</details>\n";
  }
  if (!r.notes.empty()) {
    out += fmt::format("\n<details><summary>{} note(s)</summary>\n\n", r.notes.size());
    for (const auto& n : r.notes) out += "- " + md_escape(n) + "\n";
    out += "\n</details>\n";
  }
  out += r.options.threshold_pct > 0
             ? "\nVerdicts: faster/slower = significant (p < alpha) and |change| ≥ threshold; "
               "same = not significant and |change| < threshold; unclear = otherwise"
             : "\nVerdicts (threshold 0: the test alone decides): faster/slower = significant "
               "(p < alpha); same = not significant; unclear = significant with no change in the "
               "figure";
  out +=
      "; a median whose rank test points the other way is unclear; unclear whatever the test "
      "where the sample counts cannot reach p < alpha in the rank test without ties, or are "
      "below the bootstrap's " +
      bootstrap_minimum_text() + ".\n";
  return out;
}

}  // namespace decodebench::app
