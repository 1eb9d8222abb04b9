// Factories of the rules FACT ships, one per file in this folder. rule_list.cpp lists them.
#pragma once

#include "discover/rule.h"

namespace fact::discover::rules {

Rule gemm_rule();       // gemm.cpp
Rule attention_rule();  // attention.cpp

}  // namespace fact::discover::rules
