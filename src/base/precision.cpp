#include "base/precision.h"

#include "base/error.h"

namespace fact {

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::bf16: return "bf16";
  }
  return "?";
}

Precision precision_from_name(std::string_view name) {
  for (auto p : {Precision::fp32, Precision::tf32, Precision::bf16}) {
    if (precision_name(p) == name) return p;
  }
  throw Error("unknown precision policy '" + std::string(name) + "' (expected fp32, tf32 or bf16)");
}

}  // namespace fact
