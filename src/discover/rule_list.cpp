// The list of rules FACT ships. Adding a rule: write src/discover/rules/<name>.cpp, declare
// its factory in rules/rules.h and add one line here. The registry rejects duplicate names.
#include "discover/registry.h"
#include "discover/rules/rules.h"

namespace fact::discover {

const RuleRegistry& builtin_rules() {
  static const RuleRegistry registry = [] {
    RuleRegistry r;
    r.add(rules::gemm_rule());       // aten.mm / bmm / addmm / matmul / linear -> CUTLASS GEMM
    r.add(rules::attention_rule());  // softmax(q @ k^T * s + mask) @ v, SDPA -> fused attention
    return r;
  }();
  return registry;
}

}  // namespace fact::discover
