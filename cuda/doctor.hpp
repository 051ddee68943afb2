// `decodebench doctor`: is this GPU, driver and runtime fit for graph-captured decode benchmarks?
#pragma once

#include <nlohmann/json.hpp>

namespace decodebench::cuda {

/// Runs the doctor's probes on device 0 and returns the report:
///  - `gpu`: the environment JSON (name, compute capability, driver/runtime, clocks, NVML facts);
///  - `matrix`: for each capture mode (thread_local, global, relaxed) × each injected fault (none,
///    alloc, legacy-sync, host-sync, event-query, device-sync) on a small synthetic model:
///    `outcome` captured | recovered | poisoned, the failing call and error name, and whether the
///    tokens then produced (graph or eager fallback) equal a clean eager run (`tokens_match`);
///  - `cross_thread`: capture on one thread while another thread allocates device memory, per
///    capture mode: whether the capture survived and what the other thread saw;
///  - `replay_matches_eager`: 64 tokens of graph replay equal eager execution (null where the
///    context became unusable first: not run);
///  - `context_unusable`: a probe left the CUDA context unusable (the command then exits 5);
///  - `healthy` and a one-line `verdict`.
/// Stops the matrix at the first poisoned context (later probes could not be trusted), and runs
/// neither the cross-thread probe nor the replay check after it.
nlohmann::json run_doctor();

}  // namespace decodebench::cuda
