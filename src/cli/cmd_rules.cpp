// `factc rules`: every registered rule with its PyTorch meaning and kernel family.
#include <iostream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "families/gemm/epilogue/epilogue.h"
#include "families/gemm/epilogue/idiom.h"
#include "discover/registry.h"

namespace fact::cli {

void add_rules_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("rules", "list the discovery rules");
  cmd->callback([] {
    for (const discover::Rule& r : discover::builtin_rules().rules())
      std::cout << fmt::format("{}\n  meaning: {}\n  kernel family: {}\n  tests: {}\n", r.name,
                               r.meaning, r.kernel_family, r.tests);
    std::cout << "epilogue (the elementwise tail after a gemm pattern, fused into its kernel's epilogue as an EVT)\n"
                 "  tests: tests/golden/discover/epilogue_*.txt, tests/families/gemm/epilogue/test_evt_codegen.cpp\n  ops:\n";
    for (const discover::EpilogueOp& op : discover::epilogue_ops())
      std::cout << fmt::format("    {:<26} {:<11} {}\n", op.aten, op.name, op.meaning);
    std::cout << "  idioms (written-out forms computed as one op; src/families/gemm/epilogue/idioms/):\n";
    for (const discover::Idiom& i : discover::epilogue_idioms())
      std::cout << fmt::format("    {:<26} -> {:<8} {} (forms: {}; tests: {})\n", i.name, i.op, i.meaning,
                               i.forms.size(), i.tests);
  });
}

}  // namespace fact::cli
