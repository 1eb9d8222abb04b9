// `factc rules`: every registered rule with its PyTorch meaning and kernel family, then what
// each family adds to its rules (families/family.h, Family::describe).
#include <iostream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "discover/registry.h"
#include "families/family.h"

namespace fact::cli {

void add_rules_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("rules", "list the discovery rules");
  cmd->callback([] {
    for (const discover::Rule& r : discover::builtin_rules().rules())
      std::cout << fmt::format("{}\n  meaning: {}\n  kernel family: {}\n  tests: {}\n", r.name,
                               r.meaning, r.kernel_family, r.tests);
    for (const families::Family* f : families::families()) f->describe(std::cout);
  });
}

}  // namespace fact::cli
