#include "engine/timing.h"

#include <algorithm>

#include "engine/cuda_check.h"
#include "engine/gpu_kernels.h"

namespace fact::realize {

namespace {
// Long enough to cover one candidate's host-side launch preparation (CUTLASS's initialize:
// TMA descriptors, smem attribute; cuBLASLt's heuristics are cached in prepare()).
constexpr int kHostCoverUs = 200;
}  // namespace

std::vector<TrialStats> time_alternating(const std::vector<std::function<void()>>& timed, GpuContext& gpu,
                                         int warmup, int trials) {
  cudaStream_t s = gpu.stream();
  for (const auto& run : timed) for (int w = 0; w < warmup; ++w) run();
  gpu.sync();
  std::vector<cudaEvent_t> start(timed.size()), stop(timed.size());
  for (size_t j = 0; j < timed.size(); ++j) {
    FACT_CUDA(cudaEventCreate(&start[j]));
    FACT_CUDA(cudaEventCreate(&stop[j]));
  }
  std::vector<std::vector<double>> times(timed.size());
  for (int t = 0; t < trials; ++t) {
    for (size_t j = 0; j < timed.size(); ++j) {
      gpu.flush_l2(t);
      gpu_spin(kHostCoverUs, s);  // device time only: the launch is prepared meanwhile
      FACT_CUDA(cudaEventRecord(start[j], s));
      timed[j]();
      FACT_CUDA(cudaEventRecord(stop[j], s));
    }
    gpu.sync();
    for (size_t j = 0; j < timed.size(); ++j) {
      float ms = 0;
      FACT_CUDA(cudaEventElapsedTime(&ms, start[j], stop[j]));
      times[j].push_back(ms);
    }
  }
  std::vector<TrialStats> out(timed.size());
  for (size_t j = 0; j < timed.size(); ++j) {
    cudaEventDestroy(start[j]);
    cudaEventDestroy(stop[j]);
    auto& v = times[j];
    std::sort(v.begin(), v.end());
    if (v.empty()) continue;
    out[j].trials = int(v.size());
    out[j].min_ms = v.front();
    out[j].max_ms = v.back();
    out[j].median_ms = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  }
  return out;
}

}  // namespace fact::realize
