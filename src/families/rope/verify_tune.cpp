#include "families/rope/verify_tune.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "engine/cuda_check.h"
#include "engine/device_buffer.h"
#include "engine/gpu_kernels.h"

using nlohmann::json;

namespace fact::realize {

namespace {

// The sampled rows of a tensor with strides `s` at `base`, as floats (row after row).
std::vector<float> get_rows(const RopeProblem& p, DType dtype, const void* base, const RopeStrides& s,
                            const std::vector<int64_t>& rows, cudaStream_t stream) {
  const size_t e = dtype_bytes(dtype), row_bytes = size_t(p.head_dim) * e;
  std::vector<uint8_t> bytes(rows.size() * row_bytes);
  for (size_t i = 0; i < rows.size(); ++i) {
    const char* src = static_cast<const char*>(base) + rope_row_offset(p, s, rows[i]) * int64_t(e);
    FACT_CUDA(cudaMemcpyAsync(bytes.data() + i * row_bytes, src, row_bytes, cudaMemcpyDeviceToHost, stream));
  }
  FACT_CUDA(cudaStreamSynchronize(stream));
  std::vector<float> out(rows.size() * size_t(p.head_dim));
  for (size_t k = 0; k < out.size(); ++k) out[k] = decode_element(dtype, bytes.data(), int64_t(k));
  return out;
}

std::vector<float> row_of(const std::vector<float>& all, size_t r, int64_t d) {
  return {all.begin() + std::ptrdiff_t(r * size_t(d)), all.begin() + std::ptrdiff_t((r + 1) * size_t(d))};
}

// Compares one candidate's sampled rows with the references; "" or why it fails.
std::string compare_rows(const RopeProblem& p, const std::vector<RopeRowReference>& ref, const std::vector<float>& out,
                         double& max_rel, double& worst_ratio, double& max_bound_rel) {
  double max_err = 0, max_ref = 0, max_bound = 0;
  uint64_t over = 0, nonfinite = 0;
  bool ref_varies = false, out_varies = false;
  const size_t d = size_t(p.head_dim);
  for (size_t r = 0; r < ref.size(); ++r) {
    for (size_t j = 0; j < d; ++j) {
      const double v = out[r * d + j], want = ref[r].out[j], bound = ref[r].bound[j];
      if (!std::isfinite(v)) {
        ++nonfinite;
        continue;
      }
      const double err = std::fabs(v - want);
      max_err = std::max(max_err, err);
      max_ref = std::max(max_ref, std::fabs(want));
      max_bound = std::max(max_bound, bound);
      if (bound > 0) worst_ratio = std::max(worst_ratio, err / bound);
      if (!(err <= bound)) ++over;
      ref_varies |= want != ref[r].out[0];
      out_varies |= out[r * d + j] != out[r * d];
    }
  }
  max_rel = max_ref > 0 ? max_err / max_ref : 0;
  max_bound_rel = max_ref > 0 ? max_bound / max_ref : 0;
  if (nonfinite) return fmt::format("{} sampled output elements NaN/Inf where the reference is finite", nonfinite);
  if (over) return fmt::format("{} elements beyond their error bound (max rel err {:.3g})", over, max_rel);
  if (ref_varies && !out_varies) return "output is constant along every sampled row";
  return "";
}

}  // namespace

std::vector<CandidateOutcome> verify_and_tune_rope(const RopeProblem& p, std::vector<std::unique_ptr<RopeCandidate>>& cands,
                                                   GpuContext& gpu, int warmup, int trials, bool verbose,
                                                   json* verification) {
  cudaStream_t s = gpu.stream();
  const size_t e = dtype_bytes(p.dtype);
  DeviceBuffer x(size_t(p.extent(p.x)) * e), cos(size_t(p.extent(p.cos)) * e), sin(size_t(p.extent(p.sin)) * e);
  const size_t eo = dtype_bytes(p.out_dtype);
  DeviceBuffer out(size_t(p.extent(p.out)) * eo);
  const FactRopeArgs args = make_rope_args(p, x.get(), cos.get(), sin.get(), out.get());
  auto fill_all = [&](uint64_t seed, Distribution dist, double x_scale) {
    fill_random(x.get(), p.dtype, p.extent(p.x), seed + 1, dist, x_scale, s);
    fill_random(cos.get(), p.dtype, p.extent(p.cos), seed + 2, dist, 1.0, s);
    fill_random(sin.get(), p.dtype, p.extent(p.sin), seed + 3, dist, 1.0, s);
  };
  constexpr uint64_t kTimingSeed = 0x7157;
  fill_all(kTimingSeed, Distribution::Normal, 1.0);

  std::vector<CandidateOutcome> out_list = prepare_outcomes(cands, args, gpu);
  const std::vector<int64_t> rows = rope_sample_rows(p.rows());
  json draws_log = json::array(), worst = json::object();
  std::vector<double> worst_ratio(cands.size(), 0.0);
  uint64_t seed = 0x40e0;
  for (const RopeDraw& draw : rope_draws(p.dtype)) {
    seed += 16;
    fill_all(seed, draw.dist, draw.x_scale);
    const auto hx = get_rows(p, p.dtype, x.get(), p.x, rows, s), hc = get_rows(p, p.dtype, cos.get(), p.cos, rows, s);
    const auto hs = get_rows(p, p.dtype, sin.get(), p.sin, rows, s);
    std::vector<RopeRowReference> ref;
    for (size_t i = 0; i < rows.size(); ++i)
      ref.push_back(rope_reference_row(p, row_of(hx, i, p.head_dim), row_of(hc, i, p.head_dim), row_of(hs, i, p.head_dim)));
    json log{{"draw", draw.name}};
    verify_draw(cands, out_list, args, gpu, Draw{draw.name.c_str(), draw.dist, draw.x_scale, draw.moderate}, out,
                [&](size_t i, CandidateOutcome& oc) {
      gpu.sync();
      double max_rel = 0, bound_rel = 0;
      std::string why =
          compare_rows(p, ref, get_rows(p, p.out_dtype, out.get(), p.out, rows, s), max_rel, worst_ratio[i], bound_rel);
      const int64_t extent = p.extent(p.out);
      if (why.empty() && extent <= (int64_t(1) << 24) && extent == p.rows() * p.head_dim) {
        std::vector<uint8_t> all(size_t(extent) * eo);
        FACT_CUDA(cudaMemcpyAsync(all.data(), out.get(), all.size(), cudaMemcpyDeviceToHost, s));
        gpu.sync();
        int64_t unwritten = 0;
        for (int64_t k = 0; k < extent; ++k) unwritten += std::isnan(decode_element(p.out_dtype, all.data(), k));
        if (unwritten) why = fmt::format("{} output elements NaN (unwritten)", unwritten);
      }
      log["max_rel_err"][oc.kernel] = max_rel;
      if (draw.moderate) {
        oc.max_rel_err = std::max(oc.max_rel_err, max_rel);
        oc.tolerance = std::max(oc.tolerance, bound_rel);
      }
      if (verbose)
        std::fprintf(stderr, "  verify %-44s %-10s max_rel_err %.3g %s\n", oc.kernel.c_str(), draw.name.c_str(), max_rel,
                     why.c_str());
      return why;
    });
    draws_log.push_back(log);
  }
  for (size_t i = 0; i < cands.size(); ++i)
    if (cands[i]->verifiable()) worst[out_list[i].kernel] = worst_ratio[i];
  if (verification) *verification = {{"draws", draws_log}, {"rows_sampled", rows.size()}, {"worst_bound_ratio", worst}};
  time_survivors(cands, out_list, args, gpu, warmup, trials, [&] { fill_all(kTimingSeed, Distribution::Normal, 1.0); });
  return out_list;
}

}  // namespace fact::realize
