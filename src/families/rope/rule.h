// The rope family's rule (rule.cpp): rotary position embeddings of one tensor (q or k),
// x * cos + rotate(x) * sin, -> one rope kernel.
#pragma once

#include "discover/rule.h"

namespace fact::discover::rules {

Rule rope_rule();

}  // namespace fact::discover::rules
