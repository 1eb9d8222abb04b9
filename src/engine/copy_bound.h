// A vendor candidate that bounds an ATen path from below by the bytes it must move: one
// device-to-device copy of half the bytes a fused kernel moves (a copy reads and writes each
// byte), which no chain of ATen elementwise ops computing the same output can beat. Used by
// the families whose vendor path is a chain of memory-bound ATen nodes (norm, rope).
#pragma once
#include <memory>
#include <string>

#include <fmt/format.h>

#include "engine/cuda_check.h"
#include "engine/device_buffer.h"
#include "engine/harness.h"

namespace fact::realize {

/// The lower bound, named "vendor": it computes no output (verifiable() is false), so it
/// wins only when no kernel verified (fact optimize then times the ATen nodes in the
/// module). `fused_bytes` is what the fused kernel reads and writes.
template <class Args>
class CopyBound final : public Candidate<Args> {
 public:
  explicit CopyBound(double fused_bytes) : name_("vendor"), bytes_(size_t(fused_bytes / 2)) {}
  const std::string& name() const override { return name_; }
  const char* impl() const override { return "vendor"; }
  bool verifiable() const override { return false; }
  std::string note() const override {
    return fmt::format("a lower bound of the ATen path: one device-to-device copy of {} bytes (half the {} bytes the "
                       "fused kernel moves: a copy reads and writes each)", bytes_, 2 * bytes_);
  }
  std::string prepare(const Args&, GpuContext&) override {
    src_ = DeviceBuffer(bytes_ ? bytes_ : 1);
    dst_ = DeviceBuffer(bytes_ ? bytes_ : 1);
    return "";
  }
  void run(const Args&, GpuContext& gpu) override {
    FACT_CUDA(cudaMemcpyAsync(dst_.get(), src_.get(), bytes_, cudaMemcpyDeviceToDevice, gpu.stream()));
  }

 private:
  std::string name_;
  size_t bytes_;
  DeviceBuffer src_, dst_;
};

}  // namespace fact::realize
