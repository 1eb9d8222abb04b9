// The rule registry: an explicit list (rule_list.cpp), no registration by side effect.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "discover/rule.h"

namespace fact::discover {

class RuleRegistry {
 public:
  /// Adds a rule. Throws fact::Error on a duplicate name, an empty name or no match function.
  void add(const Rule& rule);
  /// The rules in the order they were added (the order the planner runs them).
  std::span<const Rule> rules() const { return rules_; }
  /// The rule called `name`, or nullptr.
  const Rule* find(std::string_view name) const;

 private:
  std::vector<Rule> rules_;
};

/// Every rule FACT ships (rule_list.cpp), built once on first use.
const RuleRegistry& builtin_rules();

}  // namespace fact::discover
