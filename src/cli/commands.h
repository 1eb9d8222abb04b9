// factc subcommands: one registration function per command, each in its own file
// (cmd_<name>.cpp). main.cpp calls them in the order `factc --help` lists them.
#pragma once

#include <CLI/CLI.hpp>

namespace fact::cli {

void add_discover_command(CLI::App& app);  // cmd_discover.cpp
void add_realize_command(CLI::App& app);   // cmd_realize.cpp (placeholder: cmd_pending.cpp)
void add_compose_command(CLI::App& app);   // cmd_compose.cpp (placeholder: cmd_pending.cpp)
void add_registry_command(CLI::App& app);  // cmd_registry.cpp
void add_rules_command(CLI::App& app);     // cmd_rules.cpp
void add_print_command(CLI::App& app);     // cmd_print.cpp

}  // namespace fact::cli
