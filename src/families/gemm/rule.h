// The GEMM family's rule (rule.cpp): aten.mm / bmm / addmm / matmul / linear -> one CUTLASS GEMM.
#pragma once

#include "discover/rule.h"

namespace fact::discover::rules {

Rule gemm_rule();

}  // namespace fact::discover::rules
