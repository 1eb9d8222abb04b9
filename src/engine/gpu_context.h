// The GPU realization runs on: device facts, one stream, one cuBLAS handle and an L2
// flush buffer (docs/00-design.md §6: a write of more than the L2 size between timed trials).
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <memory>
#include <optional>
#include <string>

#include "engine/device_buffer.h"

namespace fact::realize {

struct GpuInfo {
  std::string name;        // e.g. "NVIDIA H200"
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  size_t l2_bytes = 0;
  std::string driver;      // e.g. "13.0" (CUDA driver API version)
  std::string runtime;     // CUDA runtime version
  // Shared memory and registers (cudaDeviceProp sharedMemPerBlockOptin,
  // sharedMemPerMultiprocessor, reservedSharedMemPerBlock: bytes; regsPerMultiprocessor).
  size_t smem_per_block_optin = 0, smem_per_sm = 0, smem_reserved_per_block = 0;
  int registers_per_sm = 0;
};

/// Returns the current device's facts, or std::nullopt when no CUDA device is usable
/// (no driver, no device): realization then stops after building.
std::optional<GpuInfo> probe_gpu();

class GpuContext {
 public:
  /// Creates a stream, a cuBLAS handle bound to it and a flush buffer of 2x the L2 size.
  /// Throws fact::Error on failure.
  explicit GpuContext(const GpuInfo& info);
  ~GpuContext();
  GpuContext(const GpuContext&) = delete;
  GpuContext& operator=(const GpuContext&) = delete;

  const GpuInfo& info() const { return info_; }
  cudaStream_t stream() const { return stream_; }
  cublasHandle_t cublas() const { return cublas_; }
  /// Overwrites the flush buffer (more than the L2 size) on the stream.
  void flush_l2(int trial);
  /// Waits for the stream and checks its error state. Throws fact::Error when the work
  /// has not finished within `timeout_s` seconds (a hung kernel).
  void sync(double timeout_s = 120.0);

 private:
  GpuInfo info_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  DeviceBuffer flush_;
};

}  // namespace fact::realize
