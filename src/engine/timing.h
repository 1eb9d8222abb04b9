// Timing candidates on the GPU (docs/00-design.md §6): CUDA events around each run, an L2
// flush before each trial, warm-up first, the candidates alternating within each round.
#pragma once
#include <functional>
#include <vector>

#include "engine/gpu_context.h"

namespace fact::realize {

/// One callable's trial times in milliseconds.
struct TrialStats {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int trials = 0;
};

/// Runs each of `timed` (each launches its work on gpu.stream()) `warmup` times, then
/// `trials` rounds in which every callable runs once in order, each run preceded by an L2
/// flush (GpuContext::flush_l2, 2x the L2 size) and a 200 us spin kernel (so that the host's
/// launch preparation, e.g. CUTLASS's TMA descriptors, happens before the start event and
/// the events measure device time), and bracketed by CUDA events. Returns one TrialStats
/// per callable, in order. Throws fact::Error when a CUDA call fails or the GPU hangs.
std::vector<TrialStats> time_alternating(const std::vector<std::function<void()>>& timed, GpuContext& gpu,
                                         int warmup, int trials);

}  // namespace fact::realize
