#include "families/attention/mask_kind.h"

namespace fact {

std::string_view mask_name(MaskKind m) {
  switch (m) {
    case MaskKind::none: return "none";
    case MaskKind::causal: return "causal";
    case MaskKind::additive: return "additive";
    case MaskKind::keep: return "keep";
    case MaskKind::drop: return "drop";
  }
  return "?";
}

std::optional<MaskKind> mask_from_name(std::string_view name) {
  for (auto m : {MaskKind::none, MaskKind::causal, MaskKind::additive, MaskKind::keep, MaskKind::drop}) {
    if (mask_name(m) == name) return m;
  }
  return std::nullopt;
}

bool mask_has_tensor(MaskKind m) {
  return m == MaskKind::additive || m == MaskKind::keep || m == MaskKind::drop;
}

}  // namespace fact
