// The attention family's rule (rule.cpp): softmax(q @ k^T * s + mask) @ v and SDPA -> one
// fused attention kernel.
#pragma once

#include "discover/rule.h"

namespace fact::discover::rules {

Rule attention_rule();

}  // namespace fact::discover::rules
