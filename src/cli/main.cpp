// factc: the FACT engine's command line. Each stage is a subcommand that reads and writes
// files (docs/00-design.md §1): discover -> plan.json, realize -> realized.json, compose -> artifact/.
#include <exception>
#include <iostream>

#include "cli/commands.h"
#include "base/error.h"
#include "base/version.h"

int main(int argc, char** argv) {
  CLI::App app{"factc: find the subgraphs of a PyTorch graph that CUTLASS kernels do better, "
               "build and tune those kernels"};
  app.set_version_flag("--version", "factc " + std::string(fact::kVersion));
  app.require_subcommand(1);
  fact::cli::add_discover_command(app);
  fact::cli::add_realize_command(app);
  fact::cli::add_compose_command(app);
  fact::cli::add_registry_command(app);
  fact::cli::add_rules_command(app);
  fact::cli::add_print_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const fact::Error& e) {
    std::cerr << "factc: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {  // a malformed input a check above did not name
    std::cerr << "factc: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
