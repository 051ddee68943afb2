// The batch-scaling table of a sweep or suite over --batch: how the lockstep step time and the
// aggregate throughput grow with the number of sequences.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>

namespace decodebench::app {

/// Prints one scaling table per group of runs that differ only in their batch size (same
/// configuration apart from --batch, same pass label) and cover at least two batch sizes, read from
/// a suite document (docs/suite.schema.json): batch, median step (ms), tokens/s per sequence
/// (1 / median step), aggregate tokens/s (batch / median step), speed-up of the aggregate over
/// batch 1 (or the smallest batch of the group), and the roofline's GB/s and efficiency when the
/// run has them. Runs without a `batch` field count as batch 1. Returns false, printing nothing,
/// when no group has two batch sizes. Never throws for a well-formed suite document.
bool print_batch_scaling(const nlohmann::json& suite_document, FILE* out);

}  // namespace decodebench::app
