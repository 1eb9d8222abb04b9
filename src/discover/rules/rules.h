// Factories of the rules FACT ships, one per file in this folder. rule_list.cpp lists them.
#pragma once

#include "discover/rule.h"

namespace fact::discover::rules {

Rule gemm_rule();  // gemm.cpp

}  // namespace fact::discover::rules
