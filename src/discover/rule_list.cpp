// The rules FACT ships: every kernel family's rules (src/families/family_list.cpp), in family
// order. A rule is added by its family (Family::rules); the registry rejects duplicate names
// and a rule whose kernel_family is not the family that lists it.
#include "base/error.h"
#include "discover/registry.h"
#include "families/family.h"

namespace fact::discover {

const RuleRegistry& builtin_rules() {
  static const RuleRegistry registry = [] {
    RuleRegistry r;
    for (const families::Family* f : families::families()) {
      for (const Rule& rule : f->rules()) {
        if (rule.kernel_family != f->name()) {
          throw Error("rule " + std::string(rule.name) + " names kernel family " + std::string(rule.kernel_family) +
                      " but is listed by family " + std::string(f->name()));
        }
        r.add(rule);
      }
    }
    return r;
  }();
  return registry;
}

}  // namespace fact::discover
