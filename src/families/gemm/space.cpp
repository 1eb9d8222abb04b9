#include "families/gemm/space.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "base/error.h"
#include "base/hash.h"
#include "families/gemm/epilogue/program.h"
#include "graph/types.h"

namespace fact::realize {

namespace {

// H200 dense tensor-core peaks (docs/perf-notes.md: measured 372-401 TFLOP/s tf32, 750-776
// bf16) and copy bandwidth (4.23-4.26 TB/s measured; 4.0 as a sustained GEMM figure, 3.0
// for the staging transpose).
constexpr double kTf32Peak = 380e12, kHalfPeak = 760e12, kGemmBw = 4.0e12, kStageBw = 3.0e12;
constexpr int kPeakSms = 132;
constexpr double kFp32Instructions = 33e12;  // H200 fp32 lanes: 128 per SM x 132 SMs x 1.98 GHz

// Layouts tf32 WGMMA can read as given (after staging): A row-major with B column-major
// (both K-major), A row-major with B row-major (FACT transposes the problem, A^T then
// goes through registers), both column-major (A goes through registers). Not A
// column-major with B row-major: CUTLASS's builder would run it with B transposed in
// shared memory by the consumer warps (sm90_wgmma_transpose.hpp), which measured 0.525 ms
// on the H200 for KernelBench #16 against 0.397 ms with A staged (docs/perf-notes.md, v7).
bool tf32_direct_layouts(Layout a, Layout b) {
  return a == Layout::Row || b == Layout::Col;
}

bool aligned16(int64_t elements, DType d) { return (elements * int64_t(dtype_bytes(d))) % 16 == 0; }

// The layout an operand has as the GEMM reads it.
Layout gemm_layout_a(const GemmFamilyKey& f) { return f.stage_a ? Layout::Row : f.layout_a; }
Layout gemm_layout_b(const GemmFamilyKey& f) { return f.stage_b ? Layout::Col : f.layout_b; }

int64_t staged_k_of(int split, int64_t k, DType staged = DType::f32) {
  const int64_t pad = 16 / int64_t(dtype_bytes(staged));  // TMA: rows of whole 16-byte units
  return split * ((k + pad - 1) / pad * pad);
}
int64_t staged_k(const GemmFamilyKey& f, int64_t k) { return staged_k_of(f.split, k, gemm_operand_element(f)); }

}  // namespace

namespace {
// gemm_families without the fused tail.
std::vector<GemmFamilyKey> gemm_only_families(const GemmProblem& p, Precision policy, std::string& why) {
  // D (and the bias and tail inputs) may differ from the operands only where a value is
  // narrowed (discover/narrow.h): bf16/fp16 operands with fp32 D, or fp32 operands under
  // bf16 (staged to bf16) with bf16 D; the bias and tail inputs fp32 or D's dtype.
  const bool d_differs = p.dtype_d != p.dtype_a, epi_differs = p.dtype_epi != p.dtype_d;
  const bool narrowed_d = p.dtype_a == DType::f32 ? policy == Precision::bf16 && p.dtype_d == DType::bf16
                                                  : p.dtype_d == DType::f32;
  if (p.dtype_a != p.dtype_b || (d_differs && !narrowed_d) || (epi_differs && p.dtype_epi != DType::f32)) {
    why = fmt::format("mixed operand dtypes (A {}, B {}, D {}, bias and tail inputs {})", to_string(p.dtype_a),
                      to_string(p.dtype_b), to_string(p.dtype_d), to_string(p.dtype_epi));
    return {};
  }
  if (p.m == 1 || p.n == 1) {
    why = "GEMV (M or N is 1): memory-bound, the vendor path reads at bandwidth";
    return {};
  }
  if (p.bias_n && p.beta != 1.0) {
    why = "bias with beta != 1: not in this family's epilogue";
    return {};
  }
  // TMA reads rows of 16 bytes: an operand read as given needs 16-byte aligned strides and
  // a contiguous extent that is a multiple of 16 bytes (CUTLASS's check_alignment: K for a
  // K-major operand, M for a column-major A, N for a row-major B); D likewise along N.
  const int64_t a_extent = p.layout_a == Layout::Row ? p.k : p.m;
  const int64_t b_extent = p.layout_b == Layout::Row ? p.n : p.k;
  const bool d_aligned = aligned16(p.ldd, p.dtype_d) && aligned16(p.batch_stride_d, p.dtype_d) &&
                         aligned16(p.n, p.dtype_d);
  if (!d_aligned && p.bias_n) {
    why = "bias with a D stride or N that is not 16-byte aligned: the no-TMA epilogue has no bias";
    return {};
  }
  GemmFamilyKey base{"", p.dtype_a, p.layout_a, p.layout_b, p.bias_n, false, false, 1, !d_aligned};
  if (d_differs) base.element_d = p.dtype_d;
  if (epi_differs) base.element_epi = p.dtype_epi;
  const bool a_aligned = aligned16(p.lda, p.dtype_a) && aligned16(p.batch_stride_a, p.dtype_a) &&
                         aligned16(a_extent, p.dtype_a);
  const bool b_aligned = aligned16(p.ldb, p.dtype_b) && aligned16(p.batch_stride_b, p.dtype_b) &&
                         aligned16(b_extent, p.dtype_b);
  // CUTLASS takes 32-bit M, N, K; staging launches one block row per 32 rows of M and N
  // and one grid layer per batch (65535 at most: the template's check).
  constexpr int64_t kInt32Max = 2147483647;
  const bool can_stage_a = (p.m + 31) / 32 <= 65535 && p.l <= 65535;
  const bool can_stage_b = (p.n + 31) / 32 <= 65535 && p.l <= 65535;
  const bool can_stage = can_stage_a && can_stage_b;
  if (p.m > kInt32Max || p.n > kInt32Max || p.k > kInt32Max) {
    why = "M, N or K beyond 32 bits";
    return {};
  }
  if (p.dtype_a != DType::f32) {  // bf16 / f16: the operands as given
    if (!a_aligned || !b_aligned) {
      why = "a leading or batch stride, or the contiguous extent, is not a multiple of 16 bytes (TMA); staging is for fp32 operands";
      return {};
    }
    GemmFamilyKey f = base;
    f.mma = p.dtype_a == DType::bf16 ? "bf16" : "f16";
    return {f};
  }
  if (policy == Precision::bf16) {
    // Both operands are rounded to bf16 in the staging copy (bf16 WGMMA, fp32
    // accumulation, D fp32): the fp32 values cannot reach the tensor cores otherwise.
    if (!can_stage) {
      why = "bf16 policy on fp32 inputs: the bf16 staging copy cannot cover M or N over 2 million or L over 65535; vendor path";
      return {};
    }
    GemmFamilyKey f = base;
    f.mma = "bf16";
    f.stage_a = f.stage_b = true;
    return {f};
  }
  if (policy == Precision::fp32) {
    if (!can_stage || staged_k_of(3, p.k) > kInt32Max) {
      why = "fp32 policy: 3xTF32 staging cannot cover this problem (M or N over 2 million, L over 65535, or 3K over 32 bits); vendor SGEMM";
      return {};
    }
    GemmFamilyKey f = base;
    f.mma = "3xtf32";
    f.stage_a = f.stage_b = true;
    f.split = 3;
    // 3xTF32 triples the MACs and writes three copies of each operand: worth it only when
    // it beats SGEMM's own estimate (fp32 SIMT at about 1/7 of the tf32 peak).
    const double sgemm_s = std::max(p.flops() / (kTf32Peak / 7.5),
                                    double(p.extent_a() + p.extent_b() + p.extent_d()) * 4 / kGemmBw);
    // The estimate is a ranking key; against measured 3xTF32 kernels it runs 1.35-1.46x
    // high (docs/perf-notes.md, v4), so the gate divides by the lower bound of that ratio.
    constexpr double kMeasuredOverEstimate = 1.0 / 1.35;
    const GemmConfig first = gemm_tuning_space(f, p, kPeakSms, 1).front();
    const double best = estimate_seconds(f, first, p, kPeakSms) * kMeasuredOverEstimate;
    if (best > 0.9 * sgemm_s) {
      why = fmt::format("fp32 policy: 3xTF32 estimated at {:.3g} ms against SGEMM's {:.3g} ms (staging traffic dominates); vendor SGEMM",
                        best * 1e3, sgemm_s * 1e3);
      return {};
    }
    return {f};
  }
  // tf32: each operand is staged when it must be (unaligned), may be (not K-major), and
  // both when K is not a multiple of 4 (a staged operand's K is padded with zeros).
  const bool a_must = !a_aligned, b_must = !b_aligned;
  const bool a_may = a_must || p.layout_a != Layout::Row;
  const bool b_may = b_must || p.layout_b != Layout::Col;
  std::vector<GemmFamilyKey> out;
  for (int mask = 0; mask < 4; ++mask) {
    GemmFamilyKey f = base;
    f.mma = "tf32";
    f.stage_a = mask & 1;
    f.stage_b = mask & 2;
    if ((a_must && !f.stage_a) || (b_must && !f.stage_b)) continue;
    if ((f.stage_a && !a_may) || (f.stage_b && !b_may)) continue;
    if ((f.stage_a || f.stage_b) && p.k % 4 != 0 && !(f.stage_a && f.stage_b)) continue;
    if ((f.stage_a && !can_stage_a) || (f.stage_b && !can_stage_b)) continue;
    if (!tf32_direct_layouts(gemm_layout_a(f), gemm_layout_b(f))) continue;
    out.push_back(f);
  }
  if (out.empty()) {
    why = can_stage ? "no tf32 family implements these layouts"
                    : "operands need staging, which cannot cover M or N over 2 million or L over 65535";
  }
  return out;
}
}  // namespace

std::vector<GemmFamilyKey> gemm_families(const GemmProblem& p, Precision policy, std::string& why) {
  auto families = gemm_only_families(p, policy, why);
  if (!p.fused()) return families;
  // A fused tail is an EVT, which needs the TMA epilogue (D in 16-byte rows).
  std::erase_if(families, [](const GemmFamilyKey& f) { return f.align1_d; });
  if (families.empty() && why.empty()) {
    why = "a fused tail needs D's leading stride and N to be multiples of 16 bytes (TMA epilogue)";
  }
  for (auto& f : families) {
    f.epilogue_tree = kernel_tail_tree(p);
    f.epilogue_broadcast = kernel_tail_broadcast(p);
  }
  return families;
}

namespace {

// Tile K spans 128 bytes of one operand row: the 128-byte TMA/WGMMA swizzle width.
int tile_k_for(DType d) { return 128 / int(dtype_bytes(d)); }

// The space: CUTLASS's commonly profiled sm90 configurations. Cooperative schedules split
// a tile across two consumer warpgroups (tile M >= 128); pingpong gives each warpgroup
// its own tile (accumulators of a whole tile per warpgroup, so tile M x N <= 128 x 128 for
// fp32 accumulators). Stream-K adds a K decomposition for problems with few output tiles.
std::vector<GemmConfig> base_space(int tk) {
  using S = Schedule;
  using T = TileScheduler;
  return {
      {128, 128, tk, 1, 1, S::Cooperative, T::Persistent},
      {128, 128, tk, 2, 1, S::Cooperative, T::Persistent},
      {128, 128, tk, 1, 2, S::Cooperative, T::Persistent},
      {128, 256, tk, 1, 1, S::Cooperative, T::Persistent},
      {128, 256, tk, 2, 1, S::Cooperative, T::Persistent},
      {256, 128, tk, 1, 2, S::Cooperative, T::Persistent},
      {128, 128, tk, 1, 1, S::Pingpong, T::Persistent},
      {64, 128, tk, 1, 2, S::Pingpong, T::Persistent},
      {128, 128, tk, 1, 1, S::Cooperative, T::StreamK},
      {128, 128, tk, 2, 2, S::Cooperative, T::StreamK},
  };
}

// fp32 accumulators each consumer thread holds: a cooperative tile is shared by two
// warpgroups (256 threads), a pingpong tile belongs to one (128).
int accumulators_per_thread(const GemmConfig& c) {
  return c.tile_m * c.tile_n / (c.schedule == Schedule::Cooperative ? 256 : 128);
}

// fp32 instructions a fused tail spends per element: each node's cost in the epilogue op
// table (about 20 for each transcendental — CUDA's erff/tanhf/expf are polynomial
// evaluations with range reduction —, one for every other node). A tail input of D's shape
// adds D's bytes to read.
double tail_instructions(const nlohmann::json& t) {
  if (!t.is_object() || !t.contains("op")) return 0;
  double n = epilogue_op_cost(t.at("op").get<std::string>());
  for (const auto& a : t.at("args")) n += tail_instructions(a);
  return n;
}

}  // namespace

double estimate_seconds(const GemmFamilyKey& f, const GemmConfig& c, const GemmProblem& p, int sm_count) {
  const int64_t k = (f.stage_a || f.stage_b) ? staged_k(f, p.k) : p.k;
  // A transposed kernel (D^T = B^T A^T) tiles N x M: its tile M runs along the problem's N.
  const bool t = gemm_transposes_problem(f);
  const double rows = double(t ? p.n : p.m), cols = double(t ? p.m : p.n);
  const double tiles = std::ceil(rows / c.tile_m) * std::ceil(cols / c.tile_n) * double(p.l);
  double waves = std::ceil(tiles / sm_count);
  if (c.scheduler == TileScheduler::StreamK) waves = tiles / sm_count * 1.05;  // 5%: fix-up cost
  const DType op = gemm_operand_element(f);
  const double per_sm = (op == DType::f32 ? kTf32Peak : kHalfPeak) / kPeakSms;
  // Smaller tiles re-read operands more: favour larger tiles slightly (arithmetic intensity).
  const double intensity_penalty = 1.0 + 32.0 / c.tile_m + 32.0 / c.tile_n;
  const bool through_registers = op == DType::f32 && gemm_layout_b(f) == Layout::Row;
  const bool a_through_registers = op == DType::f32 && gemm_layout_a(f) == Layout::Col;
  const double compute = waves * 2.0 * c.tile_m * c.tile_n * double(k) / per_sm * intensity_penalty *
                         (through_registers || a_through_registers ? 1.08 : 1.0);
  // Bytes per element of the operands as the GEMM reads them, and of D and the caller's
  // operands (what a staging copy reads): 2 and 4 for fp32 operands rounded to bf16.
  const double bytes = double(dtype_bytes(op)), io_bytes = double(dtype_bytes(f.element));
  const double la = p.batch_stride_a == 0 ? 1 : double(p.l), lb = p.batch_stride_b == 0 ? 1 : double(p.l);
  double a_bytes = la * p.m * double(k) * bytes, b_bytes = lb * p.n * double(k) * bytes;
  if (c.scheduler == TileScheduler::StreamK && tiles < sm_count) {
    // Few output tiles, long K: each tile streams its operand panels once, and L2 cannot
    // hold them; a cluster shares them (TMA multicast) across its CTAs.
    const double col_panels = std::ceil(cols / (c.tile_n * c.cluster_n));
    const double row_panels = std::ceil(rows / (c.tile_m * c.cluster_m));
    a_bytes *= t ? row_panels : col_panels;  // A is re-read once per panel along N
    b_bytes *= t ? col_panels : row_panels;
  }
  const double memory = (a_bytes + b_bytes + double(p.l) * p.m * p.n * io_bytes) / kGemmBw;
  double staging = 0;
  if (f.stage_a) staging += la * p.m * (p.k * io_bytes + double(staged_k(f, p.k)) * bytes) / kStageBw;
  if (f.stage_b) staging += lb * p.n * (p.k * io_bytes + double(staged_k(f, p.k)) * bytes) / kStageBw;
  // A cooperative kernel stores a tile's D before its warpgroups start the next tile;
  // pingpong overlaps one warpgroup's epilogue with the other's mainloop. When D's
  // traffic dominates (small K), about a quarter of it stays exposed in the former.
  // A fused tail's arithmetic (at the fp32 rate, 128 lanes x 132 SMs x 1.98 GHz = 33e12
  // instructions/s) is exposed the same way in a cooperative kernel.
  const double elements = double(p.l) * p.m * p.n;
  const double tail_s = elements * tail_instructions(f.epilogue_tree) / kFp32Instructions;
  const double exposed_epilogue =
      c.schedule == Schedule::Cooperative ? 0.25 * elements * io_bytes / kGemmBw + tail_s : 0.0;
  return std::max(compute, memory) + exposed_epilogue + staging;
}

std::vector<GemmConfig> gemm_tuning_space(const GemmFamilyKey& family, const GemmProblem& p,
                                          int sm_count, int budget) {
  auto space = base_space(tile_k_for(gemm_operand_element(family)));
  if (family.split == 3) {
    // The promoting mainloop holds a second accumulator: at most 64 + 64 registers.
    std::erase_if(space, [](const GemmConfig& c) { return accumulators_per_thread(c) > 64; });
  }
  std::stable_sort(space.begin(), space.end(), [&](const GemmConfig& a, const GemmConfig& b) {
    return estimate_seconds(family, a, p, sm_count) < estimate_seconds(family, b, p, sm_count);
  });
  if (budget > 0 && int(space.size()) > budget) space.resize(budget);
  return space;
}

std::vector<GemmKernelChoice> gemm_kernel_choices(const std::vector<GemmFamilyKey>& families,
                                                  const GemmProblem& p, int sm_count, int budget) {
  std::vector<GemmKernelChoice> firsts, rest;
  for (const auto& f : families) {
    bool first = true;
    for (const auto& c : gemm_tuning_space(f, p, sm_count, 0)) {
      (first ? firsts : rest).push_back({f, c, estimate_seconds(f, c, p, sm_count)});
      first = false;
    }
  }
  auto by_estimate = [](const GemmKernelChoice& a, const GemmKernelChoice& b) { return a.estimate_s < b.estimate_s; };
  std::stable_sort(firsts.begin(), firsts.end(), by_estimate);
  std::stable_sort(rest.begin(), rest.end(), by_estimate);
  firsts.insert(firsts.end(), rest.begin(), rest.end());
  if (budget > 0 && int(firsts.size()) > budget) firsts.resize(budget);
  return firsts;
}

std::vector<GemmRuntime> gemm_runtime_variants(const GemmConfig& c, const GemmProblem& p, int sm_count) {
  std::vector<GemmRuntime> out{GemmRuntime{}};
  const double tiles = std::ceil(double(p.m) / c.tile_m) * std::ceil(double(p.n) / c.tile_n) * double(p.l);
  if (c.scheduler == TileScheduler::Persistent) {
    if (tiles > sm_count) out.push_back({0, 0, 4});
    return out;
  }
  const int64_t k_tiles = (p.k + c.tile_k - 1) / c.tile_k;
  std::set<int> seen;
  for (double f : {0.5, 1.0, 2.0}) {
    const int s = int(std::lround(f * sm_count / tiles));
    if (s < 2 || int64_t(s) * 4 > k_tiles || !seen.insert(s).second) continue;
    out.push_back({s, 0, 0});
  }
  return out;
}

std::string runtime_suffix(const GemmRuntime& r) {
  std::string s;
  if (r.splits > 1) s += fmt::format("+splitk{}", r.splits);
  if (r.raster == 1) s += "+rasterM";
  if (r.raster == 2) s += "+rasterN";
  if (r.swizzle > 1) s += fmt::format("+swz{}", r.swizzle);
  return s;
}

std::string split_candidate_name(const std::string& candidate, GemmRuntime& r) {
  r = {};
  const std::string kernel = candidate_kernel(candidate);
  const size_t plus = kernel.size();
  if (plus == candidate.size()) return kernel;
  // A positive decimal integer that is the whole of `digits`.
  auto whole_number = [&](const std::string& digits, const std::string& opt) {
    if (digits.empty() || digits.size() > 4 || digits.find_first_not_of("0123456789") != std::string::npos) {
      throw Error("candidate " + candidate + ": bad run-time option '" + opt + "'");
    }
    return std::stoi(digits);
  };
  size_t pos = plus;
  while (pos != std::string::npos) {
    const auto next = candidate.find('+', pos + 1);
    const std::string opt = candidate.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
    if (opt.rfind("splitk", 0) == 0) {
      r.splits = whole_number(opt.substr(6), opt);
      if (r.splits < 2) throw Error("candidate " + candidate + ": split-K needs at least 2 splits");
    } else if (opt == "rasterM") {
      r.raster = 1;
    } else if (opt == "rasterN") {
      r.raster = 2;
    } else if (opt.rfind("swz", 0) == 0) {
      r.swizzle = whole_number(opt.substr(3), opt);
      if (r.swizzle != 2 && r.swizzle != 4 && r.swizzle != 8) {
        throw Error("candidate " + candidate + ": swizzle must be 2, 4 or 8");
      }
    } else {
      throw Error("candidate " + candidate + ": unknown run-time option '" + opt + "'");
    }
    pos = next;
  }
  return kernel;
}

DType gemm_operand_element(const GemmFamilyKey& f) {
  if (f.mma == "bf16") return DType::bf16;
  if (f.mma == "f16") return DType::f16;
  return DType::f32;
}

DType gemm_d_element(const GemmFamilyKey& f) { return f.element_d.value_or(f.element); }
DType gemm_epi_element(const GemmFamilyKey& f) { return f.element_epi.value_or(gemm_d_element(f)); }

bool gemm_transposes_problem(const GemmFamilyKey& f) {
  return dtype_bytes(gemm_operand_element(f)) == 4 && gemm_layout_a(f) == Layout::Row && gemm_layout_b(f) == Layout::Row;
}

std::string epilogue_token(const nlohmann::json& tree, const nlohmann::json& broadcast) {
  return "evt" + sha256_hex(tree.dump() + broadcast.dump()).substr(0, 8);
}

namespace {
std::string family_epilogue_token(const GemmFamilyKey& f) {
  std::string t = !f.epilogue_tree.is_null() ? epilogue_token(f.epilogue_tree, f.epilogue_broadcast)
                  : f.bias_n                 ? "lincomb-biasn"
                                             : "lincomb";
  if (f.element_d) t += "-d" + std::string(graph::short_name(*f.element_d));
  if (f.element_epi) t += "-e" + std::string(graph::short_name(*f.element_epi));
  return t;
}
}  // namespace

std::string gemm_kernel_name(const GemmFamilyKey& f, const GemmConfig& c) {
  auto lay = [](Layout l) { return l == Layout::Row ? 'r' : 'c'; };
  const std::string stage = f.stage_a && f.stage_b ? "-stAB" : f.stage_a ? "-stA" : f.stage_b ? "-stB" : "";
  return fmt::format("cutlass3x_sm90a_{}_{}{}r{}_{}x{}x{}_{}x{}x1_{}_{}_{}{}", f.mma, lay(f.layout_a),
                     lay(f.layout_b), stage, c.tile_m, c.tile_n, c.tile_k, c.cluster_m, c.cluster_n,
                     c.schedule == Schedule::Cooperative ? "coop" : "pingpong",
                     c.scheduler == TileScheduler::Persistent ? "persistent" : "streamk",
                     family_epilogue_token(f), f.align1_d ? "-align1" : "");
}

}  // namespace fact::realize
