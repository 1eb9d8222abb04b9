#include "families/attention/space.h"

#include "families/attention/key_sums.h"
#include "families/attention/space_sm90.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace fact::realize {
namespace {

// What a spelling asked that the kernels do not compute yet (problem.h): false with `why`.
bool spelled_extras_supported(const AttentionProblem& p, std::string& why) {
  if (p.fill)
    why = fmt::format("masked keys filled with {} rather than -inf: a row whose keys are all masked is the mean of "
                      "V in eager, and the attention kernels remove masked keys; the ATen path runs", *p.fill);
  else if (!p.mask_dtype.empty())
    why = fmt::format("an additive mask of dtype {} with {} Q: the attention kernels read a mask of Q's dtype; the "
                      "ATen path runs", p.mask_dtype, to_string(p.dtype));
  else if (p.mask_key_stride != 1)
    why = fmt::format("a mask with stride {} along the keys: the attention kernels read mask rows of contiguous "
                      "keys; the ATen path runs", p.mask_key_stride);
  else if (p.extra_masks > 0)
    why = fmt::format("{} masks: the attention kernels apply one; the ATen path runs", p.extra_masks + 1);
  return why.empty();
}

}  // namespace

std::optional<AttentionFamily> attention_family(const AttentionProblem& p, Precision policy, std::string& why) {
  why.clear();
  AttentionFamily f{"", p.dtype, int(p.head_dim), p.mask};
  if (p.dtype == DType::f32) {
    f.math = policy == Precision::fp32 ? "3xtf32" : policy == Precision::tf32 ? "tf32" : "bf16";
  } else {
    f.math = p.dtype == DType::bf16 ? "bf16" : "f16";
  }
  if (!spelled_extras_supported(p, why)) return std::nullopt;
  if (p.head_dim != 64 && p.head_dim != 96 && p.head_dim != 128) {
    why = fmt::format("head dim {} is not built (the attention kernels have head dims 64, 96 and 128): the ATen path runs",
                      p.head_dim);
    return std::nullopt;
  }
  const int64_t vec = 16 / int64_t(dtype_bytes(p.dtype));
  const std::pair<const char*, const AttentionStrides*> operands[] = {{"q", &p.q}, {"k", &p.k}, {"v", &p.v}, {"o", &p.o}};
  for (const auto& [name, s] : operands) {
    for (auto [dim, stride] : {std::pair{"batch", s->batch}, std::pair{"head", s->head}, std::pair{"row", s->row}}) {
      if (stride % vec != 0) {
        why = fmt::format("strides.{}: the {} stride {} is not a multiple of 16 bytes ({} {} elements): the attention "
                          "kernels load and store 16-byte vectors; the ATen path runs",
                          name, dim, stride, vec, to_string(p.dtype));
        return std::nullopt;
      }
    }
  }
  return f;
}

std::size_t attention_smem_bytes(const AttentionFamily& f, const AttentionConfig& c) {
  if (c.sm90) return attention_sm90_smem_bytes(f, c);
  const bool tf32 = f.math == "tf32" || f.math == "3xtf32";  // fp32 in shared memory
  const std::size_t elem = tf32 ? 4 : 2;
  const std::size_t pitch_k = std::size_t(f.head_dim) + (tf32 ? 8 : 16);
  const std::size_t pitch_v = std::size_t(f.head_dim) + (tf32 ? 4 : 8);
  const std::size_t rows_qv = std::size_t(std::max(c.block_m, c.block_n));
  return elem * (std::size_t(c.block_n) * pitch_k + rows_qv * pitch_v);
}

int attention_blocks_by_smem(const AttentionFamily& f, const AttentionConfig& c, const AttentionGpuLimits& gpu) {
  return int(gpu.smem_per_sm / (attention_smem_bytes(f, c) + gpu.smem_reserved_per_block));
}

bool attention_config_fits(const AttentionFamily& f, const AttentionConfig& c, const AttentionGpuLimits& gpu) {
  if (c.sm90) return attention_sm90_config_fits(f, c, gpu);
  const std::size_t smem = attention_smem_bytes(f, c);
  return smem <= gpu.smem_per_block && std::size_t(c.min_blocks) * (smem + gpu.smem_reserved_per_block) <= gpu.smem_per_sm;
}

int attention_register_estimate(const AttentionFamily& f, const AttentionConfig& c) {
  if (f.math == "3xtf32") return f.head_dim / 2 + 2 * (f.head_dim / 2) + c.block_n / 2 + 16 + 40;  // + Q's small parts, P V partials
  const int q_frag = f.math == "tf32" ? f.head_dim / 2 : f.head_dim / 4;
  return f.head_dim / 2 + q_frag + c.block_n / 2 + 40;
}

double attention_estimate_seconds(const AttentionFamily& f, const AttentionConfig& c, const AttentionProblem& p,
                                  const AttentionGpuLimits& gpu) {
  if (c.sm90) return attention_sm90_estimate_seconds(f, c, p, gpu);
  const int threads = c.block_m / 16 * 32;
  // Registers: __launch_bounds__(threads, MIN_BLOCKS) caps them; beyond the cap they spill.
  const int reg_cap = std::min(255, gpu.registers_per_sm / (threads * c.min_blocks)) / 8 * 8;
  const int regs_needed = attention_register_estimate(f, c);
  const int regs = std::min(regs_needed, reg_cap);
  const int by_regs = gpu.registers_per_sm / (threads * ((regs + 7) / 8 * 8));
  const int resident = std::max(1, std::min({attention_blocks_by_smem(f, c, gpu), by_regs, 2048 / threads}));

  // Work per CTA in key steps.
  const AttentionKeySums sums = attention_key_sums(p, c.block_m, c.block_n);
  const double max_steps = double(sums.max_blocks);
  const double heads = double(p.batch) * double(p.heads);
  const double total_steps = double(sums.blocks) * heads;
  const double kv_rows = double(sums.keys) * heads;
  const double ctas = double(sums.query_blocks) * heads;

  // CTAs sharing one SM at a time, and how well their warps hide latency.
  const double sharing = std::min(double(resident), std::ceil(ctas / gpu.sm_count));
  const double latency_hiding = std::min(1.0, 0.5 + sharing * threads / 32.0 / 16.0);
  // flop/s per SM on mma.sync; 3xtf32 issues three tf32 MMAs per product.
  const double peak = (f.math == "tf32" ? 380e12 : f.math == "3xtf32" ? 380e12 / 3 : 760e12) / 132.0 * 0.55;
  const double step_s = 4.0 * c.block_m * c.block_n * double(f.head_dim) * sharing / (peak * latency_hiding);
  const double slots = double(gpu.sm_count) * resident;
  double compute = p.mask == MaskKind::causal ? std::max(total_steps / slots, max_steps) * step_s
                                              : std::ceil(ctas / slots) * max_steps * step_s;
  if (regs_needed > reg_cap) compute *= 1.3;
  // Every CTA reads its head's K and V (mostly from L2: the CTAs of a head run together);
  // Q, K, V and O cross DRAM once.
  const double elem = double(dtype_bytes(p.dtype));
  const double kv_reads = kv_rows * 2.0 * f.head_dim * elem;
  const double unique = (2.0 * heads * double(p.seq_q) + 2.0 * double(p.batch) * double(p.kv_heads) * double(p.seq_k)) *
                        f.head_dim * elem;
  return std::max({compute, kv_reads / 9.0e12, unique / 3.5e12});
}

namespace {

struct Ranked {
  AttentionConfig c;
  double s;
  double tie;  // sm90: compute seconds (ties at the memory terms go to less compute); sm80: 0
  std::string name;
};

// Best first; ties by `tie`, then by name.
std::vector<Ranked> ranked(const std::vector<AttentionConfig>& configs, const AttentionFamily& f,
                           const AttentionProblem& p, const AttentionGpuLimits& gpu) {
  std::vector<Ranked> out;
  for (const auto& c : configs) {
    out.push_back({c, attention_estimate_seconds(f, c, p, gpu), c.sm90 ? attention_sm90_compute_seconds(f, c, p, gpu) : 0.0,
                   attention_kernel_name(f, c)});
  }
  std::sort(out.begin(), out.end(), [](const Ranked& a, const Ranked& b) {
    return a.s != b.s ? a.s < b.s : a.tie != b.tie ? a.tie < b.tie : a.name < b.name;
  });
  return out;
}

}  // namespace

std::vector<AttentionConfig> attention_tuning_space(const AttentionFamily& f, const AttentionProblem& p,
                                                    const AttentionGpuLimits& gpu, int budget) {
  std::vector<AttentionConfig> sm80;
  for (int bm : {64, 128}) {
    for (int bn : {32, 64}) {
      for (int mb : {1, 2, 3}) {
        const AttentionConfig c{bm, bn, mb};
        if (attention_config_fits(f, c, gpu)) sm80.push_back(c);
      }
    }
  }
  std::string why;
  const std::vector<Ranked> a = ranked(sm80, f, p, gpu);
  const std::vector<Ranked> b =
      gpu.sm90 && attention_sm90_applies(f, p, why) ? ranked(attention_sm90_space(f, gpu), f, p, gpu) : std::vector<Ranked>{};
  // Each member's best first, then the rest of both by estimate (a stable merge: each
  // member keeps its own order).
  std::vector<AttentionConfig> out;
  std::size_t i = 0, j = 0;
  if (!b.empty()) out.push_back(b[j++].c);
  if (!a.empty()) out.push_back(a[i++].c);
  while (i < a.size() || j < b.size()) {
    const bool take_b = j < b.size() && (i == a.size() || b[j].s < a[i].s || (b[j].s == a[i].s && b[j].name < a[i].name));
    out.push_back(take_b ? b[j++].c : a[i++].c);
  }
  if (budget > 0 && int(out.size()) > budget) out.resize(std::size_t(budget));
  return out;
}

const char* attention_io_token(DType d) { return d == DType::f32 ? "f32" : d == DType::bf16 ? "bf16" : "f16"; }
const char* attention_mask_token(MaskKind m) {
  return m == MaskKind::none ? "nomask" : m == MaskKind::causal ? "causal" : m == MaskKind::additive ? "additive"
                                        : m == MaskKind::keep ? "keep" : "drop";
}

std::string attention_kernel_name(const AttentionFamily& f, const AttentionConfig& c) {
  if (c.sm90) return attention_sm90_kernel_name(f, c);
  return fmt::format("fact_attn_sm80_{}_{}_d{}_{}_{}x{}_mb{}", f.math, attention_io_token(f.element), f.head_dim,
                     attention_mask_token(f.mask), c.block_m, c.block_n, c.min_blocks);
}

bool is_attention_kernel_name(const std::string& name) { return name.rfind("fact_attn_", 0) == 0; }

}  // namespace fact::realize
