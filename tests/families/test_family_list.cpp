// The family list (src/families/family_list.cpp): every family's rules are registered under
// it, and a plan pattern finds its family by its rule, else by its problem's kind.
#include <gtest/gtest.h>

#include "discover/registry.h"
#include "families/family.h"

namespace fact::families {
namespace {

using nlohmann::json;

TEST(FamilyList, EveryRuleBelongsToTheFamilyThatListsIt) {
  size_t rules = 0;
  for (const Family* f : families()) {
    EXPECT_EQ(find_family(f->name()), f);
    for (const auto& r : f->rules()) {
      ++rules;
      const discover::Rule* registered = discover::builtin_rules().find(r.name);
      ASSERT_NE(registered, nullptr) << r.name;
      EXPECT_EQ(registered->kernel_family, f->name());
    }
  }
  EXPECT_EQ(rules, discover::builtin_rules().rules().size());
  EXPECT_EQ(find_family("no such family"), nullptr);
}

TEST(FamilyList, APatternFindsItsFamilyByRuleThenByProblemKind) {
  for (const Family* f : families()) {
    const std::string rule(f->rules().at(0).name), name(f->name());
    EXPECT_EQ(family_of_pattern({{"rule", rule}}), f);
    EXPECT_EQ(family_of_pattern({{"rule", "unregistered"}, {"problem", {{"kind", name}}}}), f);
    EXPECT_EQ(family_of_problem({{"kind", name}}), f);
  }
  EXPECT_EQ(family_of_pattern({{"rule", "unregistered"}, {"problem", {{"kind", "unknown"}}}}), nullptr);
  EXPECT_EQ(family_of_pattern(json::array()), nullptr);
  EXPECT_EQ(family_of_problem(json()), nullptr);
}

}  // namespace
}  // namespace fact::families
