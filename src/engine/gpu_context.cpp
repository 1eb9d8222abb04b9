#include "engine/gpu_context.h"

#include <chrono>
#include <thread>

#include "engine/cuda_check.h"

namespace fact::realize {

namespace {
std::string version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }
}  // namespace

std::optional<GpuInfo> probe_gpu() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();  // clear the sticky "no device" error
    return std::nullopt;
  }
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return std::nullopt;
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) return std::nullopt;
  GpuInfo g;
  g.name = prop.name;
  g.cc_major = prop.major;
  g.cc_minor = prop.minor;
  g.sm_count = prop.multiProcessorCount;
  g.l2_bytes = size_t(prop.l2CacheSize);
  g.smem_per_block_optin = prop.sharedMemPerBlockOptin;
  g.smem_per_sm = prop.sharedMemPerMultiprocessor;
  g.smem_reserved_per_block = prop.reservedSharedMemPerBlock;
  g.registers_per_sm = prop.regsPerMultiprocessor;
  int v = 0;
  if (cudaDriverGetVersion(&v) == cudaSuccess) g.driver = version_string(v);
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) g.runtime = version_string(v);
  return g;
}

GpuContext::GpuContext(const GpuInfo& info) : info_(info), flush_(2 * info.l2_bytes) {
  FACT_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  FACT_CUBLAS(cublasCreate(&cublas_));
  FACT_CUBLAS(cublasSetStream(cublas_, stream_));
}

GpuContext::~GpuContext() {
  if (cublas_) cublasDestroy(cublas_);
  if (stream_) cudaStreamDestroy(stream_);
}

void GpuContext::flush_l2(int trial) {
  FACT_CUDA(cudaMemsetAsync(flush_.get(), trial & 0xff, flush_.bytes(), stream_));
}

void GpuContext::sync(double timeout_s) {
  // Poll rather than block, so a kernel that never finishes (a deadlocked candidate) turns
  // into an error naming the wait instead of a hung process.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  cudaError_t e;
  while ((e = cudaStreamQuery(stream_)) == cudaErrorNotReady) {
    if (std::chrono::steady_clock::now() > deadline) {
      throw Error("the GPU stream did not finish within " + std::to_string(int(timeout_s)) +
                  " s: a candidate kernel is hung; the CUDA context is unusable, stopping");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  FACT_CUDA(e);
  FACT_CUDA(cudaGetLastError());
}

}  // namespace fact::realize
