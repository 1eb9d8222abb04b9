// plan_swiglu (swiglu_realize.h): SwiGLU's candidates, float64 verification and tuning.
#include "families/gemm/swiglu_realize.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "engine/library_candidate.h"
#include "families/gemm/candidates.h"
#include "families/gemm/swiglu.h"
#include "families/gemm/swiglu_kernels.h"
#include "families/gemm/verify_tune.h"

using nlohmann::json;

namespace fact::families {
namespace {

using namespace realize;

// The vendor path: cuBLAS over the interleaved weight into a scratch M x 2H, then the
// pairing pass into D (the runtime runs the pattern's ATen nodes instead when it wins:
// verify_and_tune_swiglu charges their passes).
class SwigluVendor final : public GemmCandidate {
 public:
  SwigluVendor(const SwigluProblem& p, Precision policy)
      : p_(p), gemm_(make_cublas_candidate(p.gemm, policy)), name_(gemm_->name() + "+swiglu") {}
  const std::string& name() const override { return name_; }
  const char* impl() const override { return "vendor"; }
  std::string prepare(const FactGemmArgs& a, GpuContext& gpu) override {
    scratch_ = DeviceBuffer(size_t(p_.gemm.m * p_.gemm.n) * dtype_bytes(p_.gemm.dtype_d));
    return gemm_->prepare(gemm_args(a), gpu);
  }
  void run(const FactGemmArgs& a, GpuContext& gpu) override {
    gemm_->run(gemm_args(a), gpu);
    pairs(a.d, gpu.stream());
  }
  // The pairing pass alone, from the scratch into `d` (timed apart).
  void pairs(void* d, cudaStream_t s) const {
    swiglu_pairs(scratch_.get(), p_.gemm.dtype_d, p_.gemm.m, p_.hidden, p_.gemm.n, d, p_.ldd, s);
  }

 private:
  FactGemmArgs gemm_args(FactGemmArgs a) const {
    a.d = scratch_.get();
    a.ldd = p_.gemm.n;
    return a;
  }
  SwigluProblem p_;
  std::unique_ptr<GemmCandidate> gemm_;
  std::string name_;
  DeviceBuffer scratch_;
};

// Milliseconds of the ATen tail the runtime runs after the two GEMMs: silu (read G, write
// S) and mul (read S and U, write D), five passes over M x H at kAtenPassBandwidth.
double aten_swiglu_ms(const SwigluProblem& p) {
  return 5.0 * double(p.gemm.m) * double(p.hidden) * double(dtype_bytes(p.gemm.dtype_d)) / kAtenPassBandwidth * 1e3;
}

std::vector<CandidateOutcome> verify_and_tune_swiglu(const SwigluProblem& p, Precision policy,
                                                     std::vector<std::unique_ptr<GemmCandidate>>& cands,
                                                     SwigluVendor* vendor, GpuContext& gpu, const TuneContext& ctx,
                                                     json& verification) {
  const GemmProblem& g = p.gemm;
  cudaStream_t s = gpu.stream();
  const size_t ea = size_t(g.extent_a()), eb = size_t(g.extent_b()), eacc = size_t(g.m * g.n);
  const size_t ed = size_t((g.m - 1) * p.ldd + p.hidden);
  DeviceBuffer a(ea * dtype_bytes(g.dtype_a)), b(eb * dtype_bytes(g.dtype_b)), d(ed * dtype_bytes(g.dtype_d));
  DeviceBuffer a64(ea * 8), b64(eb * 8), acc64(eacc * 8), stats_dev(sizeof(CompareStats));
  FactGemmArgs args = make_gemm_args(g, a.get(), b.get(), nullptr, d.get());
  args.ldd = p.ldd;  // D is M x H; n stays the GEMM's 2H
  const double tol = gemm_tolerance(g, policy);
  std::vector<CandidateOutcome> out = prepare_outcomes(cands, args, gpu);
  for (auto& o : out) o.tolerance = tol;
  json draws = json::array();
  uint64_t seed = 0x5ea1;
  const double large = g.dtype_a == DType::f16 ? 4.0 : 1e4, small = g.dtype_a == DType::f16 ? 1e-2 : 1e-4;
  for (const Draw& draw : standard_draws(large, small)) {
    fill_random(a.get(), g.dtype_a, int64_t(ea), ++seed, draw.dist, draw.scale, s);
    fill_random(b.get(), g.dtype_b, int64_t(eb), ++seed, draw.dist, draw.scale, s);
    convert_to_double(a.get(), g.dtype_a, a64.as<double>(), int64_t(ea), s);
    convert_to_double(b.get(), g.dtype_b, b64.as<double>(), int64_t(eb), s);
    broadcast_rows(acc64.get(), true, nullptr, g.dtype_d, g.dtype_d, 1, g.m, g.n, g.n, 0, s);
    reference_gemm(g, a64.as<double>(), b64.as<double>(), acc64.as<double>(), gpu);
    const double delta = tol * max_abs_device(acc64.as<double>(), int64_t(eacc), s);
    draws.push_back({{"draw", draw.name}, {"scale", draw.scale}, {"informative", true}});
    verify_draw(cands, out, args, gpu, draw, d, [&](size_t, CandidateOutcome& o) {
      swiglu_compare(d.get(), g.dtype_d, p.ldd, acc64.as<double>(), g.m, p.hidden, delta, unit_roundoff(g.dtype_d),
                     stats_dev.as<CompareStats>(), s);
      CompareStats st{};
      double max_rel = 0;
      std::string why = read_compare_stats(stats_dev.as<CompareStats>(), g.m * p.hidden, gpu, o, st, max_rel);
      if (why.empty() && st.over_bound) {
        const int64_t e = int64_t(st.witness_index);
        why = fmt::format("{} elements beyond their error bound (max rel err {:.3g}); e.g. D[{}, {}]: gate {:.9g} "
                          "(float64), reference {:.9g}, kernel {:.9g}, bound {:.3g}",
                          st.over_bound, max_rel, e / p.hidden, e % p.hidden, st.witness_acc, st.witness_ref,
                          st.witness_value, st.witness_bound);
      }
      if (ctx.verbose) std::fprintf(stderr, "  verify %-70s %-10s max_rel_err %.3g %s\n", o.kernel.c_str(), draw.name, max_rel, why.c_str());
      return why;
    });
  }
  verification["draws"] = draws;
  std::vector<std::function<void()>> extra;
  if (vendor) extra.push_back([&] { vendor->pairs(d.get(), s); });
  const std::vector<TrialStats> pass = time_survivors(cands, out, args, gpu, ctx.warmup, ctx.trials, [&] {
    fill_random(a.get(), g.dtype_a, int64_t(ea), 0x7157, Distribution::Normal, 1.0, s);
    fill_random(b.get(), g.dtype_b, int64_t(eb), 0x7158, Distribution::Normal, 1.0, s);
  }, std::move(extra));
  if (!pass.empty()) {  // the vendor candidate as the runtime would run it: its GEMM, then ATen's silu and mul
    const double pass_ms = pass.back().median_ms, aten_ms = aten_swiglu_ms(p);
    verification["pair_pass_ms"] = pass_ms;
    verification["aten_tail_ms"] = aten_ms;
    for (auto& o : out) {
      if (o.status != "ok" || o.impl != std::string("vendor")) continue;
      const double shift = aten_ms - pass_ms;
      o.median_ms = std::max(0.0, o.median_ms + shift);
      o.min_ms = std::max(0.0, o.min_ms + shift);
      o.max_ms = std::max(0.0, o.max_ms + shift);
      o.note = fmt::format("the vendor GEMM over the interleaved weight as measured (less its {:.4f} ms pairing pass) "
                           "plus silu and mul as ATen kernels at the copy bandwidth, {:.4f} ms", pass_ms, aten_ms);
    }
  }
  return out;
}

class SwigluPattern final : public PatternRealization {
 public:
  SwigluProblem problem;

  TuneResult tune(const TuneContext& ctx) const override {
    TuneResult out;
    std::vector<std::unique_ptr<GemmCandidate>> runnable;
    auto vendor = std::make_unique<SwigluVendor>(problem, ctx.policy);
    SwigluVendor* vendor_ptr = vendor.get();
    runnable.push_back(std::move(vendor));
    load_built_kernels(kernels, *ctx.built, [](const std::string& name, const std::string& library, const std::string&) {
      return load_cutlass_candidate(name, library, kernel_symbol(name));
    }, runnable, out.build_failures);
    std::fprintf(stderr, "realize %s: verifying and tuning %zu SwiGLU candidates (M=%lld H=%lld K=%lld)\n",
                 ctx.id.c_str(), runnable.size(), (long long)problem.gemm.m, (long long)problem.hidden,
                 (long long)problem.gemm.k);
    out.outcomes = verify_and_tune_swiglu(problem, ctx.policy, runnable, vendor_ptr, *ctx.gpu, ctx, out.verification);
    return out;
  }
};

}  // namespace

std::unique_ptr<PatternRealization> plan_swiglu(const json& pat, const PlanContext& ctx,
                                                std::map<std::string, BuildRequest>& requests) {
  auto w = std::make_unique<SwigluPattern>();
  w->problem = swiglu_problem_from_json(pat.at("problem"));
  std::string why;
  const auto families = swiglu_families(w->problem, ctx.policy, why);
  if (families.empty()) {
    w->unsupported = why;
    return w;
  }
  for (const auto& ch : swiglu_kernel_choices(families, w->problem, ctx.sm_count, ctx.tune_budget)) {
    const std::string name = swiglu_kernel_name(ch.family, ch.config);
    if (!requests.count(name)) requests[name] = {name, render_swiglu_sm90(ch.family, ch.config)};
    w->kernels.push_back(name);
  }
  return w;
}

}  // namespace fact::families
