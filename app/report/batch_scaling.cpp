#include "app/report/batch_scaling.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/output_file.hpp"
#include "core/result/json_text.hpp"

namespace decodebench::app {

namespace {

struct ScalingRow {
  int64_t batch = 1;
  double step_ns = 0;  // median lockstep step
  double aggregate = 0;
  double achieved_gbps = 0;
  double efficiency = -1;  // < 0: no measured bandwidth
};

struct ScalingGroup {
  std::string title;
  std::vector<ScalingRow> rows;
};

// The configuration label without its batch=... part ("dtype=f16"; "" when only batch varied).
std::string label_without_batch(const std::string& label) {
  std::istringstream in(label);
  std::string word, out;
  while (in >> word) {
    if (word.rfind("batch=", 0) == 0) continue;
    out += (out.empty() ? "" : " ") + word;
  }
  return out;
}

// The resolved configuration without the batch: what the runs of one group share.
std::string config_without_batch(const nlohmann::json& result) {
  if (!result.contains("config") || !result["config"].is_object()) return "";
  nlohmann::json c = result["config"];
  c.erase("batch");
  // json_text, not dump(): a value may hold bytes that are not UTF-8 (a preset path or prompt
  // from the command line), replaced (U+FFFD) as in the JSON file, where dump() would throw.
  std::string key;
  for (const auto& [name, entry] : c.items()) {
    key += name + "=" +
           json_text(entry.is_object() && entry.contains("value") ? entry["value"] : entry) + ";";
  }
  return key;
}

}  // namespace

bool print_batch_scaling(const nlohmann::json& doc, FILE* out) {
  if (!doc.contains("results") || !doc["results"].is_array()) return false;
  // Configuration label of each result document.
  std::map<size_t, std::string> labels;
  if (doc.contains("configurations") && doc["configurations"].is_array()) {
    for (const auto& c : doc["configurations"]) {
      if (c.contains("result") && c["result"].is_number_integer()) {
        labels[c["result"].get<size_t>()] = c.value("label", std::string());
      }
    }
  }
  std::vector<std::string> order;
  std::map<std::string, ScalingGroup> groups;
  const auto& results = doc["results"];
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& result = results[i];
    if (!result.contains("runs") || !result["runs"].is_array()) continue;
    const std::string config = config_without_batch(result);
    const std::string rest = labels.count(i) ? label_without_batch(labels[i]) : std::string();
    for (const auto& run : result["runs"]) {
      const std::string label = run.value("label", std::string("?"));
      const std::string key = config + "|" + label;
      if (!groups.count(key)) {
        order.push_back(key);
        groups[key].title = label + (rest.empty() ? "" : " · " + rest);
      }
      ScalingRow row;
      row.batch = run.value("batch", int64_t{1});
      const auto& stats = run["results"]["stats"];
      row.step_ns = stats["tpot_ns"]["median"].get<double>();
      row.aggregate =
          stats.contains("aggregate_tokens_per_s")
              ? stats["aggregate_tokens_per_s"].get<double>()
              : (row.step_ns > 0 ? static_cast<double>(row.batch) * 1e9 / row.step_ns : 0.0);
      if (run.contains("roofline")) {
        const auto& roof = run["roofline"];
        row.achieved_gbps = roof.value("achieved_gbps", 0.0);
        // Not measured (CPU): null in current documents, 0 in older ones.
        const auto measured = roof.find("measured_gbps");
        const auto efficiency = roof.find("efficiency");
        if (measured != roof.end() && measured->is_number() && measured->get<double>() > 0 &&
            efficiency != roof.end() && efficiency->is_number()) {
          row.efficiency = efficiency->get<double>();
        }
      }
      groups[key].rows.push_back(row);
    }
  }
  bool printed = false;
  for (const auto& key : order) {
    ScalingGroup& g = groups[key];
    std::set<int64_t> sizes;
    for (const auto& r : g.rows) sizes.insert(r.batch);
    if (sizes.size() < 2) continue;
    std::stable_sort(g.rows.begin(), g.rows.end(),
                     [](const ScalingRow& a, const ScalingRow& b) { return a.batch < b.batch; });
    const ScalingRow& base = g.rows.front();  // batch 1 when the group has it
    const bool roofline = std::any_of(g.rows.begin(), g.rows.end(),
                                      [](const ScalingRow& r) { return r.achieved_gbps > 0; });
    const bool efficiency = std::any_of(g.rows.begin(), g.rows.end(),
                                        [](const ScalingRow& r) { return r.efficiency >= 0; });
    fmt::print(out, "\nbatch scaling · {} (one step decodes one token of every sequence)\n",
               g.title);
    fmt::print(out, "{:>6} {:>11} {:>12} {:>15} {:>12}", "batch", "step (ms)", "tok/s/seq",
               "aggregate tok/s", fmt::format("vs batch {}", base.batch));
    if (roofline) fmt::print(out, " {:>9}", "GB/s");
    if (efficiency) fmt::print(out, " {:>10}", "BW eff.");
    fmt::print(out, "\n");
    for (const auto& r : g.rows) {
      const double per_seq = r.step_ns > 0 ? 1e9 / r.step_ns : 0.0;
      const std::string speedup =
          base.aggregate > 0 ? fmt::format("{:.2f}×", r.aggregate / base.aggregate) : "-";
      fmt::print(out, "{:>6} {:>11.3f} {:>12.1f} {:>15.1f} {:>12}", r.batch, r.step_ns / 1e6,
                 per_seq, r.aggregate, speedup);
      if (roofline) fmt::print(out, " {:>9.1f}", r.achieved_gbps);
      if (efficiency) {
        fmt::print(out, " {:>10}",
                   r.efficiency >= 0 ? fmt::format("{:.1f}%", 100.0 * r.efficiency) : "-");
      }
      fmt::print(out, "\n");
    }
    // The BW eff. clause only where that column is printed (not for CPU sweeps, which measure no
    // read bandwidth).
    fmt::print(
        out, "(tok/s/seq = 1 ÷ median step; aggregate = batch ÷ median step{}{})\n",
        roofline ? "; GB/s = the model's weight bytes, counted once per step, ÷ median step" : "",
        roofline && efficiency ? " (BW eff.: ÷ the measured read bandwidth)" : "");
    printed = true;
  }
  if (printed) flush_output(out);
  return printed;
}

}  // namespace decodebench::app
