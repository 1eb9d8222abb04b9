// The fused-attention kernel family: which kernel a problem and a precision policy call for,
// its tuning space, a cost model that ranks it, and the procedural kernel names. Two
// members: templates/attention_sm80*.cu.in (mma.sync, FlashAttention-2's schedule; every
// dtype and policy) and templates/attention_sm90*.cu.in (WGMMA + TMA, warp-specialized,
// sm_90a only; bf16/fp16 inputs only, space_sm90.h).
//
// A kernel is fixed by (tensor-core math, element type, head dim, mask kind) from the
// problem and the policy, and a configuration (BLOCK_M query rows per CTA, BLOCK_N keys per
// inner step, MIN_BLOCKS for __launch_bounds__, and for the sm90 member its schedule
// options) from the space below. Its name spells all of these and is the cache key part,
// report row and allow/deny list entry:
//   fact_attn_sm80_<math>_<io>_d<D>_<mask>_<BLOCK_M>x<BLOCK_N>_mb<MIN_BLOCKS>
// math: tf32 | 3xtf32 | bf16 | f16; io (Q/K/V/O elements): f32 | bf16 | f16; mask: nomask | causal |
// additive | keep | drop. E.g. fact_attn_sm80_tf32_f32_d96_causal_64x64_mb2. The sm90 names
// (attention_sm90_kernel_name) begin fact_attn_sm90_. The name is also the C symbol prefix
// of the kernel's ABI functions (it is a C identifier).
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

/// The schedule of an attention_sm90 kernel: its placeholders besides the element, head dim,
/// mask, BLOCK_M, BLOCK_N and MIN_BLOCKS (the template's header comment says what each does).
struct AttentionSm90Options {
  int stages = 2;            // 1-4 K/V pipeline stages
  int consumer_wg = 2;       // 1 | 2 consumer warpgroups; BLOCK_M = 64 x consumer_wg
  bool overlap = true;       // the next block's Q K^T issued before this block's softmax
  bool pingpong = true;      // the two consumer warpgroups take turns (2 WG and overlap)
  bool persistent = true;    // a grid of SMs x MIN_BLOCKS CTAs looping over the tiles
  int epilogue = 1;          // 0 registers -> global; 1 own shared tile + TMA store; 2 through Q's tile
  bool l2hint = false;       // TMA loads: K/V evict-last, Q evict-first
  bool lazy_rescale = true;  // O rescaled only when a row's max grows by more than 2^8
  bool chain = false;        // the next tile's first Q K^T with this tile's last P V (overlap, persistent)
  int cluster = 1;           // 1 | 2: pairs of CTAs multicast K/V (no mask, no chain; not in the space)
  int producer_regs = 24;    // registers the producer warpgroup keeps (40 for clusters)
  int stage_rows = 32;       // fp32 inputs: rows of a staging sub-tile (32 | 64)
  int staging_max = 4;       // fp32 inputs: at most this many staging slots (as many as fit)
  bool qreg = false;         // tf32: Q in registers, Q K^T from registers (RS; not yet in the space)
  int prefetch = 0;          // 0, or K/V blocks (and the next tile's Q) prefetched this many ahead into L2
  int k_ahead = 1;           // tf32, 2+ stages: K loaded 1 key block ahead of V's transposition, or 0 (v16's order)
  bool load_warp = false;    // tf32: one producer warp issues the loads, three transpose (else all four transpose)
  bool split_tail = false;   // no mask, persistent: a last round of at most half the grid split over its key blocks
  bool balance_tail = false; // causal, persistent: the last two rounds dealt longest first to the least-loaded CTA
  bool operator==(const AttentionSm90Options&) const = default;
};

/// One point of the tuning space: an sm80 configuration, or an sm90 one when `sm90` is set.
struct AttentionConfig {
  int block_m;     // sm80: 64 | 128 query rows per CTA (16 per warp); sm90: 64 x consumer_wg
  int block_n;     // sm80: 32 | 64 keys per inner step; sm90: 64 | 96 | 128 | 160 | 176 | 192
  int min_blocks;  // sm80: 1 | 2 | 3 (__launch_bounds__); sm90: 1 | 2 (2 only with 1 WG)
  std::optional<AttentionSm90Options> sm90 = std::nullopt;  // set: the attention_sm90 template
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
  bool sm90 = true;  // the GPU runs sm_90a code (cc 9.0): the attention_sm90 member is built
};

/// The family that implements `p` under `policy`, or std::nullopt with `why` set (then the
/// pattern is vendor-only: the ATen path runs). fp32 inputs: policy tf32 -> math tf32;
/// bf16 -> math bf16 (Q/K/V converted to bf16 while loading, O stays fp32); fp32 -> math
/// 3xtf32 (fp32-accurate). bf16 and fp16 inputs use math of their own dtype under any
/// policy. None for a head dim other than 64, 96 or 128, or when a stride of Q, K, V or O is
/// not a multiple of 16 bytes (the kernels load and store 16-byte vectors; the template's
/// can_implement rejects such strides).
std::optional<AttentionFamily> attention_family(const AttentionProblem& p, Precision policy, std::string& why);

/// Dynamic shared memory of one CTA in bytes, as the template computes kSmemBytes (sm90:
/// attention_sm90_smem_bytes). sm80: a K tile
/// of BLOCK_N rows of pitch D + 8 (tf32) or D + 16 (16-bit), and a V tile (Q's staging space
/// first) of max(BLOCK_M, BLOCK_N) rows of pitch D + 4 (tf32) or D + 8 (16-bit); 4-byte
/// elements for tf32 and 3xtf32 math (fp32 in shared memory), 2-byte for bf16/f16 math.
std::size_t attention_smem_bytes(const AttentionFamily& f, const AttentionConfig& c);

/// CTAs of `c` that fit on one SM by shared memory: floor(smem_per_sm / (smem + reserved)).
int attention_blocks_by_smem(const AttentionFamily& f, const AttentionConfig& c, const AttentionGpuLimits& gpu);

/// An sm90 configuration: attention_sm90_config_fits. An sm80 one is kept when its shared
/// memory fits one block (<= smem_per_block) and MIN_BLOCKS CTAs fit one SM (MIN_BLOCKS x
/// (smem + reserved) <= smem_per_sm): a MIN_BLOCKS the SM cannot hold only constrains
/// registers for nothing.
bool attention_config_fits(const AttentionFamily& f, const AttentionConfig& c, const AttentionGpuLimits& gpu);

/// Registers per thread the kernel needs, estimated from its arrays: the O accumulator
/// (D/2 fp32), the Q fragments (D/2 for tf32, D/4 for 16-bit; 3xtf32 twice tf32's, plus 16
/// for its P V partial sums), the S tile (BLOCK_N/2), plus 40 for addresses, softmax state and
/// temporaries. A ranking input, not a prediction.
int attention_register_estimate(const AttentionFamily& f, const AttentionConfig& c);

/// Estimated seconds of `c` on `p` (a ranking key, not a prediction). An sm90 configuration
/// is estimated by attention_sm90_estimate_seconds (space_sm90.h). sm80: work is counted in
/// key steps: each CTA does ceil(keys it sees / BLOCK_N) steps of BLOCK_M x BLOCK_N x D x 4
/// flops (a causal CTA sees keys up to its last row: about half the work; with a window only
/// those from its first row's window on, attention_tile_keys). Resident CTAs per
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

/// The sm80 member: every configuration of BLOCK_M {64, 128} x BLOCK_N {32, 64} x MIN_BLOCKS
/// {1, 2, 3} that fits (attention_config_fits). The sm90 member, when `gpu.sm90` and the
/// problem allows it (attention_sm90_applies): attention_sm90_space. Each member is ranked
/// by attention_estimate_seconds, best first (ties by name, so BLOCK_N 32 before 64: it won
/// on minGPT on the H200, docs/perf-notes.md v6b); the result is the sm90 member's best,
/// then the sm80 member's best (so a budget of 2 tries both), then the rest of both by
/// estimate; at most `budget` entries (0 = all). Without the sm90 member this is the sm80
/// ranking unchanged.
std::vector<AttentionConfig> attention_tuning_space(const AttentionFamily& f, const AttentionProblem& p,
                                                    const AttentionGpuLimits& gpu, int budget);

/// The procedural kernel name (see the header comment; attention_sm90_kernel_name for an
/// sm90 configuration). It is also the C symbol prefix.
std::string attention_kernel_name(const AttentionFamily& f, const AttentionConfig& c);

/// The name tokens of an element type ("f32" | "bf16" | "f16") and a mask kind ("nomask" |
/// "causal" | "additive" | "keep" | "drop").
const char* attention_io_token(DType d);
const char* attention_mask_token(MaskKind m);

/// True for a name attention_kernel_name makes (prefix "fact_attn_").
bool is_attention_kernel_name(const std::string& name);

}  // namespace fact::realize
