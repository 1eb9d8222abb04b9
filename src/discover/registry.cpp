#include "discover/registry.h"

#include "base/error.h"

namespace fact::discover {

void RuleRegistry::add(const Rule& rule) {
  if (rule.name.empty()) throw Error("rule registry: a rule has no name");
  if (!rule.match) throw Error("rule registry: rule '" + std::string(rule.name) + "' has no match function");
  if (find(rule.name)) throw Error("rule registry: duplicate rule name '" + std::string(rule.name) + "'");
  rules_.push_back(rule);
}

const Rule* RuleRegistry::find(std::string_view name) const {
  for (const Rule& r : rules_)
    if (r.name == name) return &r;
  return nullptr;
}

}  // namespace fact::discover
