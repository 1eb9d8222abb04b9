// factc subcommands: one registration function per command, each in its own file
// (cmd_<name>.cpp). main.cpp calls them in the order `factc --help` lists them.
#pragma once

#include <filesystem>
#include <string>
#include <system_error>

#include <CLI/CLI.hpp>

namespace fact::cli {

/// A CLI11 check for a directory flag: the path is a directory, or does not exist yet (the
/// command creates it). An existing file or other non-directory fails, naming the path.
inline CLI::Validator directory_or_new() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        std::error_code ec;
        if (std::filesystem::exists(path, ec) && !std::filesystem::is_directory(path, ec)) {
          return path + " exists and is not a directory";
        }
        return {};
      },
      "DIR");
}

void add_discover_command(CLI::App& app);  // cmd_discover.cpp
void add_realize_command(CLI::App& app);   // cmd_realize.cpp (placeholder: cmd_pending.cpp)
void add_compose_command(CLI::App& app);   // cmd_compose.cpp (placeholder: cmd_pending.cpp)
void add_registry_command(CLI::App& app);  // cmd_registry.cpp
void add_rules_command(CLI::App& app);     // cmd_rules.cpp
void add_print_command(CLI::App& app);     // cmd_print.cpp

}  // namespace fact::cli
