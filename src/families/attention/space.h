// The fused-attention kernel family (src/families/attention/templates/attention_sm80.cu.in): which
// kernel a problem and a precision policy call for, its tuning space, a cost model that
// ranks it, and the procedural kernel names.
//
// A kernel is fixed by (tensor-core math, element type, head dim, mask kind) from the
// problem and the policy, and a configuration (BLOCK_M query rows per CTA, BLOCK_N keys per
// inner step, MIN_BLOCKS for __launch_bounds__) from the space below. Its name spells all
// of these and is the cache key part, report row and allow/deny list entry:
//   fact_attn_sm80_<math>_<io>_d<D>_<mask>_<BLOCK_M>x<BLOCK_N>_mb<MIN_BLOCKS>
// math: tf32 | 3xtf32 | bf16 | f16; io (Q/K/V/O elements): f32 | bf16 | f16; mask: nomask | causal |
// additive | keep | drop. E.g. fact_attn_sm80_tf32_f32_d96_causal_64x64_mb2. The name is
// also the C symbol prefix of the kernel's ABI functions (it is a C identifier).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "base/precision.h"
#include "families/attention/problem.h"

namespace fact::realize {

/// What the problem and the policy fix about an attention kernel.
struct AttentionFamily {
  std::string math;  // "tf32" | "3xtf32" | "bf16" | "f16": the mma.sync operand type (3xtf32:
                     // fp32-accurate, each operand split into two tf32 parts, three products)
  DType element;     // Q/K/V/O element type
  int head_dim;      // 64 | 96 | 128
  MaskKind mask;
  bool operator==(const AttentionFamily&) const = default;
};

/// One point of the tuning space.
struct AttentionConfig {
  int block_m;     // 64 | 128: query rows per CTA (16 per warp)
  int block_n;     // 32 | 64: keys per inner step
  int min_blocks;  // 1 | 2 | 3: __launch_bounds__ minimum CTAs per SM
  bool operator==(const AttentionConfig&) const = default;
};

/// The GPU facts the space depends on. Defaults: the H200 (sm_90), CUDA C Programming Guide,
/// "Compute Capabilities", technical specifications for 9.0: 132 SMs, 227 KiB of shared memory
/// per block (opt-in), 228 KiB per SM, 1 KiB of each block's shared memory reserved by the
/// system, 65536 32-bit registers per SM.
struct AttentionGpuLimits {
  int sm_count = 132;
  std::size_t smem_per_block = 227 * 1024;
  std::size_t smem_per_sm = 228 * 1024;
  std::size_t smem_reserved_per_block = 1024;
  int registers_per_sm = 65536;
};

/// The family that implements `p` under `policy`, or std::nullopt with `why` set (then the
/// pattern is vendor-only: the ATen path runs). fp32 inputs: policy tf32 -> math tf32;
/// bf16 -> math bf16 (Q/K/V converted to bf16 while loading, O stays fp32); fp32 -> math
/// 3xtf32 (fp32-accurate). bf16 and fp16 inputs use math of their own dtype under any
/// policy. None for a head dim other than 64, 96 or 128, or when a stride of Q, K, V or O is
/// not a multiple of 16 bytes (the kernels load and store 16-byte vectors; the template's
/// can_implement rejects such strides).
std::optional<AttentionFamily> attention_family(const AttentionProblem& p, Precision policy, std::string& why);

/// Dynamic shared memory of one CTA in bytes, as the template computes kSmemBytes: a K tile
/// of BLOCK_N rows of pitch D + 8 (tf32) or D + 16 (16-bit), and a V tile (Q's staging space
/// first) of max(BLOCK_M, BLOCK_N) rows of pitch D + 4 (tf32) or D + 8 (16-bit); 4-byte
/// elements for tf32 and 3xtf32 math (fp32 in shared memory), 2-byte for bf16/f16 math.
std::size_t attention_smem_bytes(const AttentionFamily& f, const AttentionConfig& c);

/// CTAs of `c` that fit on one SM by shared memory: floor(smem_per_sm / (smem + reserved)).
int attention_blocks_by_smem(const AttentionFamily& f, const AttentionConfig& c, const AttentionGpuLimits& gpu);

/// A configuration is kept when its shared memory fits one block (<= smem_per_block) and
/// MIN_BLOCKS CTAs fit one SM (MIN_BLOCKS x (smem + reserved) <= smem_per_sm): a
/// MIN_BLOCKS the SM cannot hold only constrains registers for nothing.
bool attention_config_fits(const AttentionFamily& f, const AttentionConfig& c, const AttentionGpuLimits& gpu);

/// Registers per thread the kernel needs, estimated from its arrays: the O accumulator
/// (D/2 fp32), the Q fragments (D/2 for tf32, D/4 for 16-bit; 3xtf32 twice tf32's, plus 16
/// for its P V partial sums), the S tile (BLOCK_N/2), plus 40 for addresses, softmax state and
/// temporaries. A ranking input, not a prediction.
int attention_register_estimate(const AttentionFamily& f, const AttentionConfig& c);

/// Estimated seconds of `c` on `p` (a ranking key, not a prediction). Work is counted in
/// key steps: each CTA does ceil(keys it sees / BLOCK_N) steps of BLOCK_M x BLOCK_N x D x 4
/// flops (a causal CTA sees keys up to its last row: about half the work). Resident CTAs per
/// SM: min(by shared memory, by registers, 2048 threads), at least 1; the CTAs that share an
/// SM (at most ceil(CTAs / sm_count) of them) share its mma.sync rate (55 % of the dense
/// peak: tf32 380 TFLOP/s, bf16/f16 760 over 132 SMs, docs/perf-notes.md; 3xtf32 a third of
/// tf32's), at full rate from
/// 16 warps, half with none. Time: whole waves of the longest CTA (tile quantization), or
/// for causal masks the larger of the balanced total and the longest CTA (the template
/// starts the longest first); x 1.3 when the register estimate exceeds what __launch_bounds__ allows (65536 / (threads x
/// MIN_BLOCKS), at most 255: spills). Never below the K/V reads of every CTA at 9 TB/s (an
/// assumed L2 rate: the CTAs of one head run together) or one DRAM pass over Q, K, V and O at
/// 3.5 TB/s.
double attention_estimate_seconds(const AttentionFamily& f, const AttentionConfig& c, const AttentionProblem& p,
                                  const AttentionGpuLimits& gpu);

/// Every configuration of BLOCK_M {64, 128} x BLOCK_N {32, 64} x MIN_BLOCKS {1, 2, 3} that fits
/// (attention_config_fits), ranked by attention_estimate_seconds, best first (ties by
/// name, so BLOCK_N 32 before 64: it won on minGPT on the H200, docs/perf-notes.md v6b); at
/// most `budget` entries (0 = all).
std::vector<AttentionConfig> attention_tuning_space(const AttentionFamily& f, const AttentionProblem& p,
                                                    const AttentionGpuLimits& gpu, int budget);

/// The procedural kernel name (see the header comment). It is also the C symbol prefix.
std::string attention_kernel_name(const AttentionFamily& f, const AttentionConfig& c);

/// True for a name attention_kernel_name makes (prefix "fact_attn_").
bool is_attention_kernel_name(const std::string& name);

}  // namespace fact::realize
