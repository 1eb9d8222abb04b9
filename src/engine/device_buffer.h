// An owning device allocation (cudaMalloc), movable, freed on destruction.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "engine/cuda_check.h"

namespace fact::realize {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  /// Allocates `bytes` (at least 1) of device memory. Throws fact::Error on failure.
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    FACT_CUDA(cudaMalloc(&ptr_, bytes ? bytes : 1));
  }
  ~DeviceBuffer() { if (ptr_) cudaFree(ptr_); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(o.bytes_) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  template <class T> T* as() const { return static_cast<T*>(ptr_); }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace fact::realize
