// The norm family's rule (rule.cpp): LayerNorm / RMSNorm over the last dimension, and the
// residual add feeding it, -> one norm kernel.
#pragma once

#include "discover/rule.h"

namespace fact::discover::rules {

Rule norm_rule();

}  // namespace fact::discover::rules
