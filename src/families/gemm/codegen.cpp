#include "families/gemm/codegen.h"

#include <map>
#include <regex>

#include "base/error.h"
#include "engine/embedded_templates.h"
#include "families/gemm/epilogue/evt_codegen.h"

namespace fact::realize {

namespace {

std::string cutlass_element(DType d) {
  switch (d) {
    case DType::f32: return "float";  // fp32 in memory; the builder maps it to tf32 MMA
    case DType::f16: return "cutlass::half_t";
    case DType::bf16: return "cutlass::bfloat16_t";
    default: break;  // no kernel computes in another dtype
  }
  return "?";
}

std::string cutlass_layout(Layout l) {
  return l == Layout::Row ? "cutlass::layout::RowMajor" : "cutlass::layout::ColumnMajor";
}

}  // namespace

std::map<std::string, std::string> config_placeholders(const GemmConfig& c) {
  const bool coop = c.schedule == Schedule::Cooperative;
  return {{"TILE_M", std::to_string(c.tile_m)},
          {"TILE_N", std::to_string(c.tile_n)},
          {"TILE_K", std::to_string(c.tile_k)},
          {"CLUSTER_M", std::to_string(c.cluster_m)},
          {"CLUSTER_N", std::to_string(c.cluster_n)},
          {"SCHEDULE", coop ? "cooperative" : "pingpong"},
          {"KERNEL_SCHEDULE", coop ? "cutlass::gemm::KernelTmaWarpSpecializedCooperative"
                                   : "cutlass::gemm::KernelTmaWarpSpecializedPingpong"}};
}

std::string render_gemm_sm90(const GemmFamilyKey& f, const GemmConfig& c) {
  const bool coop = c.schedule == Schedule::Cooperative;
  const bool transpose = gemm_transposes_problem(f);
  const std::string name = gemm_kernel_name(f, c);
  // As the GEMM reads them: a staged A is row-major, a staged B column-major (K-major).
  const Layout a = f.stage_a ? Layout::Row : f.layout_a;
  const Layout b = f.stage_b ? Layout::Col : f.layout_b;
  const std::string staging = f.stage_a && f.stage_b ? "A and B" : f.stage_a ? "A" : f.stage_b ? "B" : "none";
  const bool evt = !f.epilogue_tree.is_null();
  const EvtSource fusion = evt ? render_evt(f.epilogue_tree, f.epilogue_broadcast) : plain_fusion();
  std::map<std::string, std::string> values = config_placeholders(c);
  values.insert({
      {"NAME", name},
      {"SYMBOL", kernel_symbol(name)},
      {"ABI", embedded::kKernelAbiHeader},
      // The caller's A and B (a staging copy's source), as the MMA reads them, and D.
      {"ELEMENT_IN", cutlass_element(f.element)},
      {"ELEMENT_A", cutlass_element(gemm_operand_element(f))},
      {"ELEMENT_B", cutlass_element(gemm_operand_element(f))},
      {"ELEMENT_D", cutlass_element(gemm_d_element(f))},
      {"ELEMENT_EPI", cutlass_element(gemm_epi_element(f))},
      // For D^T = B^T A^T: B^T is column-major N x K, A^T is K-major (column-major K x M).
      {"LAYOUT_A", transpose ? cutlass_layout(Layout::Col) : cutlass_layout(a)},
      {"LAYOUT_B", transpose ? cutlass_layout(Layout::Col) : cutlass_layout(b)},
      {"CALLER_A_ROW", f.layout_a == Layout::Row ? "true" : "false"},
      {"CALLER_B_ROW", f.layout_b == Layout::Row ? "true" : "false"},
      {"STAGE_A", f.stage_a ? "true" : "false"},
      {"STAGE_B", f.stage_b ? "true" : "false"},
      {"SPLIT", std::to_string(f.split)},
      {"STAGING", f.split == 3 ? staging + ", split into tf32 parts (3xTF32)"
                  : gemm_operand_element(f) != f.element ? staging + ", rounded to " + to_string(gemm_operand_element(f))
                                                         : staging},
      {"ALIGN_D", f.align1_d ? "1" : "16 / int(sizeof(ElementD))"},
      {"STREAM_K", c.scheduler == TileScheduler::StreamK ? "true" : "false"},
      // PDL after staging (see the template): staged persistent kernels.
      {"PDL", (f.stage_a || f.stage_b) && c.scheduler == TileScheduler::Persistent ? "1" : "0"},
      {"HAS_BIAS", f.bias_n ? "true" : "false"},
      {"EVT", evt ? "true" : "false"},
      {"FUSION_DECLS", fusion.declarations},
      {"FUSION_ARGS", fusion.arguments},
      {"TRANSPOSE_PROBLEM", transpose ? "true" : "false"},
      {"EPILOGUE_SCHEDULE", coop ? "cutlass::epilogue::TmaWarpSpecializedCooperative"
                                 : "cutlass::epilogue::TmaWarpSpecialized"},
      {"SCHEDULER", c.scheduler == TileScheduler::Persistent ? "persistent" : "stream-K"},
      {"TILE_SCHEDULER", c.scheduler == TileScheduler::Persistent
                             ? "cutlass::gemm::PersistentScheduler"
                             : "cutlass::gemm::StreamKScheduler"},
      {"EPILOGUE", std::string(evt ? "a fused elementwise tail (EVT)" : f.bias_n ? "alpha * acc + bias[n]" : "alpha * acc") +
                       (f.align1_d ? ", D stored without TMA (alignment 1)" : "")},
  });
  return fill_placeholders(embedded::kGemmSm90Template, values);
}

}  // namespace fact::realize
