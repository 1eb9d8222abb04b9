#include "realize/gemm_space.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "common/hash.h"

namespace fact::realize {

std::optional<GemmFamilyKey> gemm_family(const GemmProblem& p, Precision policy, std::string& why) {
  if (p.dtype_a != p.dtype_b || p.dtype_a != p.dtype_d) {
    why = "mixed operand dtypes";
    return std::nullopt;
  }
  GemmFamilyKey key{"", p.dtype_a, p.layout_a, p.layout_b, p.bias_n};
  switch (p.dtype_a) {
    case DType::F32:
      if (policy == Precision::fp32) {
        why = "fp32 policy: no fp32-accurate CUTLASS GEMM in this family (SIMT/3xTF32 not built); vendor SGEMM only";
        return std::nullopt;
      }
      if (policy == Precision::bf16) {
        why = "bf16 policy on fp32 inputs: vendor path (cuBLAS fast-bf16 compute) only";
        return std::nullopt;
      }
      key.mma = "tf32";
      break;
    case DType::BF16: key.mma = "bf16"; break;
    case DType::F16: key.mma = "f16"; break;
  }
  // TMA needs 16-byte aligned leading dimensions (pointers are checked at run time).
  const int64_t align = 16 / int64_t(dtype_bytes(p.dtype_a));
  auto aligned = [&](int64_t v) { return v % align == 0; };
  if (!aligned(p.lda) || !aligned(p.ldb) || !aligned(p.ldd) || !aligned(p.batch_stride_a) ||
      !aligned(p.batch_stride_b) || !aligned(p.batch_stride_d)) {
    why = fmt::format("leading or batch stride not a multiple of {} elements (TMA needs 16 bytes)", align);
    return std::nullopt;
  }
  if (p.bias_n && p.beta != 1.0) {
    why = "bias with beta != 1: not in this family's epilogue";
    return std::nullopt;
  }
  return key;
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
  };
}

// Estimated relative cost: waves of output tiles (tile quantization included) times the
// work per tile. A stream-K scheduler splits K across the idle multiprocessors, so its
// waves are the even share of all MAC work. A coarse ranking, not a prediction of time.
double estimate_cost(const GemmConfig& c, const GemmProblem& p, int sm_count) {
  const double tiles = std::ceil(double(p.m) / c.tile_m) * std::ceil(double(p.n) / c.tile_n) * p.l;
  const double tile_work = double(c.tile_m) * c.tile_n * p.k;
  double waves = std::ceil(tiles / sm_count);
  if (c.scheduler == TileScheduler::StreamK) waves = tiles / sm_count * 1.05;  // 5%: fix-up cost
  // Smaller tiles re-read operands more: favour larger tiles slightly (arithmetic intensity).
  const double intensity_penalty = 1.0 + 32.0 / c.tile_m + 32.0 / c.tile_n;
  return waves * tile_work * intensity_penalty;
}

}  // namespace

std::vector<GemmConfig> gemm_tuning_space(const GemmFamilyKey& family, const GemmProblem& p,
                                          int sm_count, int budget) {
  auto space = base_space(tile_k_for(family.element));
  std::stable_sort(space.begin(), space.end(), [&](const GemmConfig& a, const GemmConfig& b) {
    return estimate_cost(a, p, sm_count) < estimate_cost(b, p, sm_count);
  });
  if (budget > 0 && int(space.size()) > budget) space.resize(budget);
  return space;
}

bool gemm_transposes_problem(const GemmFamilyKey& f) {
  return dtype_bytes(f.element) == 4 && f.layout_a == Layout::Row && f.layout_b == Layout::Row;
}

std::string gemm_kernel_name(const GemmFamilyKey& f, const GemmConfig& c) {
  auto lay = [](Layout l) { return l == Layout::Row ? 'r' : 'c'; };
  return fmt::format("cutlass3x_sm90a_{}_{}{}r_{}x{}x{}_{}x{}x1_{}_{}_{}", f.mma, lay(f.layout_a),
                     lay(f.layout_b), c.tile_m, c.tile_n, c.tile_k, c.cluster_m, c.cluster_n,
                     c.schedule == Schedule::Cooperative ? "coop" : "pingpong",
                     c.scheduler == TileScheduler::Persistent ? "persistent" : "streamk",
                     f.bias_n ? "lincomb-biasn" : "lincomb");
}

std::string kernel_symbol(const std::string& kernel_name) {
  return "fact_k_" + sha256_hex(kernel_name).substr(0, 16);
}

}  // namespace fact::realize
