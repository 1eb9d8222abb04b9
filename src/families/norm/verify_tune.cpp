#include "families/norm/verify_tune.h"

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

// The sampled rows of one draw on the host, and their references.
struct DrawRows {
  std::vector<std::vector<float>> x, residual;
  std::vector<NormRowReference> ref;
};

void put_row(void* base, DType d, int64_t row, int64_t stride, const std::vector<float>& v, cudaStream_t s) {
  const auto bytes = encode_elements(d, v);
  char* dst = static_cast<char*>(base) + row * stride * int64_t(dtype_bytes(d));
  FACT_CUDA(cudaMemcpyAsync(dst, bytes.data(), bytes.size(), cudaMemcpyHostToDevice, s));
  FACT_CUDA(cudaStreamSynchronize(s));  // `bytes` is freed on return
}

void put_vector(void* dst, DType d, const std::vector<float>& v, cudaStream_t s) {
  const auto bytes = encode_elements(d, v);
  FACT_CUDA(cudaMemcpyAsync(dst, bytes.data(), bytes.size(), cudaMemcpyHostToDevice, s));
  FACT_CUDA(cudaStreamSynchronize(s));
}

std::vector<uint8_t> get_rows(const void* base, DType d, const std::vector<int64_t>& rows, int64_t cols,
                              cudaStream_t s) {
  const size_t row_bytes = size_t(cols) * dtype_bytes(d);
  std::vector<uint8_t> out(rows.size() * row_bytes);
  for (size_t i = 0; i < rows.size(); ++i) {
    FACT_CUDA(cudaMemcpyAsync(out.data() + i * row_bytes, static_cast<const char*>(base) + rows[i] * int64_t(row_bytes),
                              row_bytes, cudaMemcpyDeviceToHost, s));
  }
  FACT_CUDA(cudaStreamSynchronize(s));
  return out;
}

// Compares one candidate's sampled rows with the draw's references; "" or why it fails.
std::string compare_rows(const NormProblem& p, const DrawRows& d, const std::vector<uint8_t>& out,
                         const std::vector<uint8_t>& sum, double& max_rel, double& worst_ratio, double& max_bound_rel) {
  double max_err = 0, max_ref = 0, max_bound = 0;
  uint64_t over = 0, nonfinite = 0, sum_wrong = 0;
  bool ref_varies = false, out_varies = false;
  const int64_t n = p.cols;
  for (size_t r = 0; r < d.ref.size(); ++r) {
    const auto& ref = d.ref[r];
    const float first = decode_element(p.out_dtype, out.data(), int64_t(r) * n);
    for (int64_t j = 0; j < n; ++j) {
      const double v = decode_element(p.out_dtype, out.data(), int64_t(r) * n + j);
      if (!std::isfinite(v)) {
        ++nonfinite;
        continue;
      }
      const double err = std::fabs(v - ref.out[size_t(j)]);
      max_err = std::max(max_err, err);
      max_ref = std::max(max_ref, std::fabs(ref.out[size_t(j)]));
      max_bound = std::max(max_bound, ref.bound[size_t(j)]);
      if (ref.bound[size_t(j)] > 0) worst_ratio = std::max(worst_ratio, err / ref.bound[size_t(j)]);
      if (!(err <= ref.bound[size_t(j)])) ++over;
      ref_varies |= ref.out[size_t(j)] != ref.out[0];
      out_varies |= float(v) != first;
      if (p.writes_sum() && decode_element(p.dtype, sum.data(), int64_t(r) * n + j) != ref.sum[size_t(j)]) ++sum_wrong;
    }
  }
  max_rel = max_ref > 0 ? max_err / max_ref : 0;
  max_bound_rel = max_ref > 0 ? max_bound / max_ref : 0;
  if (nonfinite) return fmt::format("{} sampled output elements NaN/Inf where the reference is finite", nonfinite);
  if (sum_wrong) return fmt::format("{} sampled sum elements differ from x + residual rounded as eager rounds it", sum_wrong);
  if (over) return fmt::format("{} elements beyond their error bound (max rel err {:.3g})", over, max_rel);
  if (ref_varies && !out_varies) return "output is constant along every sampled row";
  return "";
}

}  // namespace

std::vector<CandidateOutcome> verify_and_tune_norm(const NormProblem& p, std::vector<std::unique_ptr<NormCandidate>>& cands,
                                                   GpuContext& gpu, int warmup, int trials, bool verbose,
                                                   json* verification) {
  cudaStream_t s = gpu.stream();
  const size_t e = dtype_bytes(p.dtype), eo = dtype_bytes(p.out_dtype);
  const size_t ep = p.param_dtype ? dtype_bytes(*p.param_dtype) : 4;
  const int64_t cells = p.rows * p.cols;
  DeviceBuffer x(size_t(p.extent_x()) * e), res(std::max<size_t>(size_t(p.extent_residual()) * e, 1));
  DeviceBuffer w(size_t(p.cols) * ep), b(size_t(p.cols) * ep), out(size_t(cells) * eo);
  DeviceBuffer sum(p.writes_sum() ? size_t(cells) * e : 1);
  const FactNormArgs args = make_norm_args(p, x.get(), res.get(), w.get(), b.get(), out.get(), sum.get());
  auto fill_all = [&](uint64_t seed) {
    fill_random(x.get(), p.dtype, p.extent_x(), seed + 1, Distribution::Normal, 1.0, s);
    if (p.residual) fill_random(res.get(), p.dtype, p.extent_residual(), seed + 2, Distribution::Normal, 1.0, s);
  };
  constexpr uint64_t kTimingSeed = 0x7157;
  fill_all(kTimingSeed);
  const DType pd = p.param_dtype.value_or(DType::f32);
  const std::vector<float> weight = p.weight ? norm_draw_param(p.cols, pd, 0x3e1, false) : std::vector<float>{};
  const std::vector<float> bias = p.bias ? norm_draw_param(p.cols, pd, 0x3e2, true) : std::vector<float>{};
  if (p.weight) put_vector(w.get(), pd, weight, s);
  if (p.bias) put_vector(b.get(), pd, bias, s);

  std::vector<CandidateOutcome> out_list = prepare_outcomes(cands, args, gpu);
  const std::vector<int64_t> rows = norm_sample_rows(p.rows);
  json draws_log = json::array(), worst = json::object();
  std::vector<double> worst_ratio(cands.size(), 0.0);
  uint64_t seed = 0x9a0;
  for (const NormDraw& draw : norm_draws()) {
    seed += 16;
    fill_all(seed);
    DrawRows d;
    for (size_t i = 0; i < rows.size(); ++i) {
      d.x.push_back(norm_draw_row(draw.name, p.cols, p.dtype, seed * 1000 + i));
      put_row(x.get(), p.dtype, rows[i], p.x_stride, d.x.back(), s);
      d.residual.emplace_back();
      if (p.residual) {
        auto r = norm_draw_row(draw.name, p.cols, p.dtype, seed * 1000 + 500 + i);
        for (auto& v : r) v = round_to(p.dtype, 0.5f * v);
        put_row(res.get(), p.dtype, rows[i], p.residual_stride, r, s);
        d.residual.back() = r;
      }
      d.ref.push_back(norm_reference_row(p, d.x.back(), d.residual.back(), weight, bias));
    }
    json log{{"draw", draw.name}, {"rows_sampled", rows.size()}};
    // The sum is poisoned before the first candidate and after each check (verify_draw
    // poisons the output only), so that every candidate must write it.
    poison_nan(sum, s);
    verify_draw(cands, out_list, args, gpu, Draw{draw.name.c_str(), Distribution::Normal, 1.0, draw.moderate}, out,
                [&](size_t i, CandidateOutcome& oc) {
      gpu.sync();
      const auto got = get_rows(out.get(), p.out_dtype, rows, p.cols, s);
      const auto got_sum = p.writes_sum() ? get_rows(sum.get(), p.dtype, rows, p.cols, s) : std::vector<uint8_t>{};
      double max_rel = 0, bound_rel = 0;
      std::string why = compare_rows(p, d, got, got_sum, max_rel, worst_ratio[i], bound_rel);
      if (why.empty() && cells <= (int64_t(1) << 24)) {
        std::vector<uint8_t> all(size_t(cells) * eo);
        FACT_CUDA(cudaMemcpyAsync(all.data(), out.get(), all.size(), cudaMemcpyDeviceToHost, s));
        gpu.sync();
        int64_t unwritten = 0;
        for (int64_t k = 0; k < cells; ++k) unwritten += std::isnan(decode_element(p.out_dtype, all.data(), k));
        if (unwritten) why = fmt::format("{} output elements NaN (unwritten)", unwritten);
      }
      poison_nan(sum, s);
      log["max_rel_err"][oc.kernel] = max_rel;
      if (draw.moderate) {
        oc.max_rel_err = std::max(oc.max_rel_err, max_rel);
        oc.tolerance = std::max(oc.tolerance, bound_rel);
      }
      if (verbose) std::fprintf(stderr, "  verify %-56s %-10s max_rel_err %.3g %s\n", oc.kernel.c_str(), draw.name.c_str(), max_rel, why.c_str());
      return why;
    });
    draws_log.push_back(log);
  }
  for (size_t i = 0; i < cands.size(); ++i)
    if (cands[i]->verifiable()) worst[out_list[i].kernel] = worst_ratio[i];
  if (verification) *verification = {{"draws", draws_log}, {"sampled_rows", rows.size()}, {"rows", p.rows}, {"worst_bound_ratio", worst}};
  time_survivors(cands, out_list, args, gpu, warmup, trials, [&] { fill_all(kTimingSeed); });
  return out_list;
}

}  // namespace fact::realize
