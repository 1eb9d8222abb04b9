// The one candidate that runs a generated kernel: its shared library from the kernel cache,
// opened with dlopen, called through the family's C ABI (src/families/<name>/abi.h), which
// every family spells the same way: <symbol>_can_implement(const Args*) -> int,
// <symbol>_workspace_bytes(const Args*) -> size_t and
// <symbol>_run(const Args*, void* workspace, size_t bytes, void* stream) -> int, 0 = success.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "engine/build.h"
#include "engine/device_buffer.h"
#include "engine/harness.h"
#include "engine/kernel_library.h"

namespace fact::realize {

template <class Args>
class LibraryCandidate final : public Candidate<Args> {
 public:
  /// Per-candidate arguments (e.g. a GEMM's scheduler options); empty: the arguments as given.
  using Adjust = std::function<Args(Args)>;
  /// A return code in words, appended as " (<text>)" to the messages; null: the code alone.
  using Describe = std::string (*)(int rc);

  /// Loads the three entry points of `symbol` from `library`. Throws fact::Error naming an
  /// unloadable library or a missing symbol.
  LibraryCandidate(std::string name, const std::string& library, const std::string& symbol, Adjust adjust = {},
                   Describe describe = nullptr)
      : name_(std::move(name)),
        library_(library),
        adjust_(std::move(adjust)),
        describe_(describe),
        can_implement_(library_.function<CanImplement>(symbol, "_can_implement")),
        workspace_fn_(library_.function<WorkspaceBytes>(symbol, "_workspace_bytes")),
        run_(library_.function<Run>(symbol, "_run")) {}

  const std::string& name() const override { return name_; }
  const char* impl() const override { return "cutlass"; }
  size_t workspace_bytes() const override { return workspace_.bytes(); }

  /// "" when can_implement accepts the arguments (the workspace is then allocated), else
  /// "can_implement returned <rc>[ (<text>)]".
  std::string prepare(const Args& given, GpuContext&) override {
    const Args args = adjusted(given);
    if (int rc = can_implement_(&args); rc != 0) return "can_implement returned " + code(rc);
    const size_t ws = workspace_fn_(&args);
    if (ws > workspace_.bytes()) workspace_ = DeviceBuffer(ws);
    return "";
  }
  /// Throws fact::Error "kernel <name> returned <rc>[ (<text>)]" for a non-zero return.
  void run(const Args& given, GpuContext& gpu) override {
    const Args args = adjusted(given);
    if (int rc = run_(&args, workspace_.get(), workspace_.bytes(), gpu.stream()); rc != 0) {
      throw Error("kernel " + name_ + " returned " + code(rc));
    }
  }

 private:
  using CanImplement = int (*)(const Args*);
  using WorkspaceBytes = size_t (*)(const Args*);
  using Run = int (*)(const Args*, void*, size_t, void*);

  Args adjusted(const Args& given) const { return adjust_ ? adjust_(given) : given; }
  std::string code(int rc) const { return std::to_string(rc) + (describe_ ? " (" + describe_(rc) + ")" : ""); }

  std::string name_;
  KernelLibrary library_;
  Adjust adjust_;
  Describe describe_;
  CanImplement can_implement_;
  WorkspaceBytes workspace_fn_;
  Run run_;
  DeviceBuffer workspace_;
};

/// Appends to `runnable` every kernel of `kernels` that built (`built`, by name), loaded with
/// `load(name, library, symbol)` (the build's symbol, else the name); a kernel that failed to
/// build or whose load threw goes to `failures` as a quarantined realized.json candidate
/// {"kernel", "impl": "cutlass", "status": "quarantined", "reason", "key"}.
template <class Cand, class Load>
void load_built_kernels(const std::vector<std::string>& kernels, const std::map<std::string, BuildResult>& built,
                        Load&& load, std::vector<std::unique_ptr<Cand>>& runnable, nlohmann::json& failures) {
  for (const auto& name : kernels) {
    const BuildResult& b = built.at(name);
    std::string why = b.ok ? "" : b.reason;
    if (b.ok) {
      try {
        runnable.push_back(load(name, b.library.string(), b.symbol.empty() ? name : b.symbol));
      } catch (const std::exception& e) {
        why = e.what();
      }
    }
    if (!why.empty()) failures.push_back({{"kernel", name}, {"impl", "cutlass"}, {"status", "quarantined"}, {"reason", why}, {"key", b.key}});
  }
}

}  // namespace fact::realize
