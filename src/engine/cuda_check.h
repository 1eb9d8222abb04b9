// Checked CUDA runtime and cuBLAS calls: a failure throws fact::Error naming the call,
// the file:line and the error string. Use after every call and after every launch.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "base/error.h"

namespace fact::realize {

[[noreturn]] inline void throw_cuda(const char* what, cudaError_t e, const char* file, int line) {
  throw Error(std::string(what) + " failed at " + file + ":" + std::to_string(line) + ": " +
              cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}
[[noreturn]] inline void throw_cublas(const char* what, cublasStatus_t s, const char* file, int line) {
  throw Error(std::string(what) + " failed at " + file + ":" + std::to_string(line) +
              ": cuBLAS status " + std::to_string(int(s)));
}

}  // namespace fact::realize

#define FACT_CUDA(call)                                                                   \
  do {                                                                                    \
    cudaError_t fact_err_ = (call);                                                       \
    if (fact_err_ != cudaSuccess) ::fact::realize::throw_cuda(#call, fact_err_, __FILE__, __LINE__); \
  } while (0)

#define FACT_CUBLAS(call)                                                                 \
  do {                                                                                    \
    cublasStatus_t fact_st_ = (call);                                                     \
    if (fact_st_ != CUBLAS_STATUS_SUCCESS) ::fact::realize::throw_cublas(#call, fact_st_, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: the launch error, without synchronizing.
#define FACT_CUDA_LAUNCH() FACT_CUDA(cudaGetLastError())
