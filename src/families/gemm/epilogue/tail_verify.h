// Verifying a GEMM with a fused elementwise tail (docs/06-verification.md, "Fused tails"):
// the tail's external inputs on the device, the float64 reference of each draw, the check
// that a draw can tell right from wrong, and which branches the draws exercised.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/device_buffer.h"
#include "families/gemm/epilogue/program.h"
#include "families/gemm/epilogue/ranges.h"
#include "families/gemm/candidates.h"
#include "families/gemm/epilogue/tail_kernels.h"

namespace fact::realize {

/// A draw informs when its reference output differs from each of three probe elements'
/// values over at least this share of the elements (and at least one): a constant reference (a ReLU that cuts everything, a clamp
/// that saturates everywhere) cannot tell a right kernel from one that writes that constant.
constexpr double kInformativeShare = 1e-3;

class TailCheck {
 public:
  /// Allocates the inputs of `p`'s tail (p.fused() must hold). Throws fact::Error when the
  /// tail does not compile or the GPU fails.
  explicit TailCheck(const GemmProblem& p);

  /// Points args.epi at the inputs (a tensor of D's shape uses D's strides).
  void set_args(FactGemmArgs& args) const;
  /// Fresh normal inputs with standard deviation `scale` (and their float64 copies).
  void fill(uint64_t seed, double scale, cudaStream_t stream);
  /// Examines the draw's reference after `acc64` holds the float64 GEMM result (syncs):
  /// records the branch sides it exercised; returns "" when the draw informs, else why not.
  std::string examine(const double* acc64, cudaStream_t stream);
  /// max |acc64| of the last examined draw.
  double max_abs_acc() const { return last_.max_abs_acc; }
  /// CompareStats of `d` against the last draw's tail reference, `delta` = the GEMM's
  /// allowed absolute error, `out_unit` = D's unit roundoff.
  void compare(const void* d, const double* acc64, double delta, double out_unit, CompareStats* stats_device,
               cudaStream_t stream) const;
  /// The branches no examined, informative draw took both ways ("" when every one did),
  /// e.g. "relu (step 4) never saw x <= 0"; a side no acc and inputs can take
  /// (epilogue_branch_reach) is not counted.
  std::string unexercised() const;
  /// The branch sides no acc and inputs can take, with the argument's interval ("" when
  /// there are none), e.g. "clamp (upper bound) (step 7): x lies in [-0.107, 0.841], never x >= 1".
  std::string unreachable() const;
  /// In place d = tail(d) in fp32 with this check's inputs (a tail pass, for timing).
  void apply(void* d, cudaStream_t stream) const;
  const EpilogueProgram& program() const { return prog_; }

 private:
  GemmProblem p_;
  EpilogueProgram prog_;
  TailInputs in_, in64_;
  std::vector<DeviceBuffer> buffers_;
  DeviceBuffer stats_;
  TailReferenceStats last_{};
  uint32_t sides_[2 * EpilogueProgram::kMaxInstr / 32] = {};
  std::vector<BranchReach> reach_;  // per instruction of prog_
  std::string side_text(int i, int side) const;  // "> 0", "<= -1", ">= 1"
};

/// A vendor candidate followed by the tail as one fp32 elementwise pass over D, in place:
/// the way to compute a fused pattern around a vendor GEMM, and the time a fused kernel must
/// beat. Named "<inner>+tail". The pass is `tail_kernel` when given (the generated tail
/// kernel, tail_codegen.h, loaded as a candidate of the GEMM ABI; called with a = d), which
/// the candidate then names as its companion; else FACT's interpreting pass (apply_tail).
std::unique_ptr<GemmCandidate> make_tail_pass_candidate(std::unique_ptr<GemmCandidate> inner,
                                                        const GemmProblem& p,
                                                        std::unique_ptr<GemmCandidate> tail_kernel = nullptr);

}  // namespace fact::realize
