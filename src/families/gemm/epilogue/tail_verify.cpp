#include "families/gemm/epilogue/tail_verify.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/error.h"
#include "engine/gpu_kernels.h"

namespace fact::realize {

namespace {

TailInputKind kind_of(const std::string& k) {
  if (k == "n") return TailInputKind::n;
  if (k == "m") return TailInputKind::m;
  if (k == "mn") return TailInputKind::mn;
  throw Error("epilogue input broadcast '" + k + "' is not n, m or mn");
}

// Kinds of c0..c3 from the problem's broadcast map.
void set_kinds(const GemmProblem& p, TailInputs& in) {
  for (const auto& [slot, kind] : p.tail_broadcast.items()) {
    const int i = epilogue_input_slot(slot);
    if (i < 0) throw Error("epilogue input '" + slot + "' is not c0..c3");
    in.kind[i] = kind_of(kind.get<std::string>());
  }
}

int64_t elements(const GemmProblem& p, TailInputKind k) {
  return k == TailInputKind::n ? p.n : k == TailInputKind::m ? p.m : k == TailInputKind::mn ? p.extent_d() : 0;
}

}  // namespace

TailCheck::TailCheck(const GemmProblem& p)
    : p_(p), prog_(compile_epilogue(p.tail_tree)), stats_(sizeof(TailReferenceStats)),
      reach_(epilogue_branch_reach(prog_)) {
  set_kinds(p, in_);
  set_kinds(p, in64_);
  for (int s = 0; s < 4; ++s) {
    if (in_.kind[s] == TailInputKind::none) continue;
    const int64_t count = elements(p, in_.kind[s]);
    buffers_.emplace_back(size_t(count) * dtype_bytes(p.dtype_epi));
    in_.ptr[s] = buffers_.back().get();
    buffers_.emplace_back(size_t(count) * sizeof(double));
    in64_.ptr[s] = buffers_.back().get();
    if (in_.kind[s] == TailInputKind::mn) {
      in_.ld[s] = in64_.ld[s] = p.ldd;
      in_.bs[s] = in64_.bs[s] = p.batch_stride_d;
    }
  }
}

void TailCheck::set_args(FactGemmArgs& args) const {
  for (int s = 0; s < 4; ++s) {
    args.epi[s] = in_.ptr[s];
    args.epi_ld[s] = in_.ld[s];
    args.epi_batch_stride[s] = in_.bs[s];
  }
}

void TailCheck::fill(uint64_t seed, double scale, cudaStream_t stream) {
  for (int s = 0; s < 4; ++s) {
    if (in_.kind[s] == TailInputKind::none) continue;
    const int64_t count = elements(p_, in_.kind[s]);
    fill_random(const_cast<void*>(in_.ptr[s]), p_.dtype_epi, count, seed + 977 * uint64_t(s), Distribution::Normal, scale, stream);
    convert_to_double(in_.ptr[s], p_.dtype_epi, static_cast<double*>(const_cast<void*>(in64_.ptr[s])), count, stream);
  }
}

std::string TailCheck::examine(const double* acc64, cudaStream_t stream) {
  tail_reference_stats(acc64, prog_, in64_, p_.l, p_.m, p_.n, p_.ldd, p_.batch_stride_d,
                       stats_.as<TailReferenceStats>(), stream);
  FACT_CUDA(cudaMemcpyAsync(&last_, stats_.get(), sizeof last_, cudaMemcpyDeviceToHost, stream));
  FACT_CUDA(cudaStreamSynchronize(stream));
  const double total = double(p_.l) * double(p_.m) * double(p_.n);
  const double need = std::max(1.0, kInformativeShare * total);
  const unsigned long long differs = std::min({last_.differs_from_probe[0], last_.differs_from_probe[1],
                                                last_.differs_from_probe[2]});
  if (double(differs) < need) {
    return fmt::format("the reference is {} (as few as {} of {:.0f} elements differ from a probe value; first {:.4g}): it cannot tell right from wrong",
                       differs == 0 ? "one constant" : "nearly constant", differs, total, last_.first_value);
  }
  for (int w = 0; w < int(std::size(sides_)); ++w) sides_[w] |= last_.sides[w];
  return "";
}

void TailCheck::compare(const void* d, const double* acc64, double delta, double out_unit, CompareStats* stats,
                        cudaStream_t stream) const {
  compare_to_tail_reference(d, p_.dtype_d, acc64, prog_, in64_, delta, out_unit, p_.l, p_.m, p_.n, p_.ldd,
                            p_.batch_stride_d, stats, stream);
}

void TailCheck::apply(void* d, cudaStream_t stream) const {
  apply_tail(d, p_.dtype_d, p_.dtype_epi, prog_, in_, p_.l, p_.m, p_.n, p_.ldd, p_.batch_stride_d, stream);
}

std::string TailCheck::unexercised() const {
  std::string out;
  for (int i = 0; i < prog_.size; ++i) {
    const EpiOp op = prog_.code[i].op;
    if (!epilogue_op_branches(op)) continue;
    for (int side = 0; side < 2; ++side) {
      const int bit = 2 * i + side;
      if (sides_[bit / 32] >> (bit % 32) & 1u) continue;
      if (!(side == 0 ? reach_[size_t(i)].through : reach_[size_t(i)].other)) continue;  // no input takes it
      out += fmt::format("{}{} (step {}) never saw x {}", out.empty() ? "" : "; ", epilogue_branch_label(op), i, side_text(i, side));
    }
  }
  return out;
}

std::string TailCheck::unreachable() const {
  std::string out;
  for (int i = 0; i < prog_.size; ++i) {
    if (!epilogue_op_branches(prog_.code[i].op)) continue;
    const BranchReach& r = reach_[size_t(i)];
    for (int side = 0; side < 2; ++side) {
      if (side == 0 ? r.through : r.other) continue;
      out += fmt::format("{}{} (step {}): x lies in [{:.3g}, {:.3g}], never x {}", out.empty() ? "" : "; ",
                         epilogue_branch_label(prog_.code[i].op), i, r.lo, r.hi, side_text(i, side));
    }
  }
  return out;
}

std::string TailCheck::side_text(int i, int side) const {
  const double c = epilogue_breakpoint(prog_.code[i]);
  const bool hi = epilogue_branch_direction(prog_.code[i].op) < 0;
  return fmt::format("{} {:g}", side == 0 ? (hi ? "<" : ">") : (hi ? ">=" : "<="), c);
}

namespace {

class TailPassCandidate final : public GemmCandidate {
 public:
  TailPassCandidate(std::unique_ptr<GemmCandidate> inner, const GemmProblem& p, std::unique_ptr<GemmCandidate> kernel)
      : inner_(std::move(inner)), kernel_(std::move(kernel)), name_(inner_->name() + "+tail"), p_(p),
        prog_(compile_epilogue(p.tail_tree)) {
    set_kinds(p, kinds_);
  }
  const std::string& name() const override { return name_; }
  const char* impl() const override { return inner_->impl(); }
  std::string companion() const override { return kernel_ ? kernel_->name() : std::string(); }
  std::string prepare(const FactGemmArgs& args, GpuContext& gpu) override {
    std::string why = inner_->prepare(args, gpu);
    if (why.empty() && kernel_) {
      if (std::string k = kernel_->prepare(in_place(args), gpu); !k.empty()) why = "tail kernel " + kernel_->name() + ": " + k;
    }
    return why;
  }
  size_t workspace_bytes() const override { return inner_->workspace_bytes(); }
  void run(const FactGemmArgs& args, GpuContext& gpu) override {
    inner_->run(args, gpu);
    if (kernel_) return kernel_->run(in_place(args), gpu);
    // The caller's inputs, of the kinds the tail fixes.
    TailInputs in = kinds_;
    for (int s = 0; s < 4; ++s) {
      in.ptr[s] = args.epi[s];
      in.ld[s] = args.epi_ld[s];
      in.bs[s] = args.epi_batch_stride[s];
    }
    apply_tail(args.d, p_.dtype_d, p_.dtype_epi, prog_, in, args.l, args.m, args.n, args.ldd, args.batch_stride_d, gpu.stream());
  }

 private:
  // The tail kernel's arguments: C is the D the vendor GEMM wrote.
  static FactGemmArgs in_place(FactGemmArgs args) {
    args.a = args.d;
    args.lda = args.ldd;
    args.batch_stride_a = args.batch_stride_d;
    return args;
  }

  std::unique_ptr<GemmCandidate> inner_, kernel_;
  std::string name_;
  GemmProblem p_;
  EpilogueProgram prog_;
  TailInputs kinds_;
};

}  // namespace

std::unique_ptr<GemmCandidate> make_tail_pass_candidate(std::unique_ptr<GemmCandidate> inner, const GemmProblem& p,
                                                        std::unique_ptr<GemmCandidate> tail_kernel) {
  return std::make_unique<TailPassCandidate>(std::move(inner), p, std::move(tail_kernel));
}

}  // namespace fact::realize
