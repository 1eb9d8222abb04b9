#include "realize/gpu_context.h"

#include "realize/cuda_check.h"

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

void GpuContext::sync() {
  FACT_CUDA(cudaStreamSynchronize(stream_));
  FACT_CUDA(cudaGetLastError());
}

}  // namespace fact::realize
