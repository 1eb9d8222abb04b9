// `factc registry list|export|import`: the tuning registry (src/registry/registry.h).
#include <fmt/format.h>

#include <iostream>

#include "cli/commands.h"
#include "base/error.h"
#include "base/file_io.h"
#include "base/json_format.h"
#include "engine/build.h"
#include "registry/registry.h"

namespace fact::cli {

void add_registry_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("registry", "list, export or import tuning records");
  cmd->require_subcommand(1);
  auto path = std::make_shared<std::string>();
  cmd->add_option("--db", *path, "registry database (default $FACT_REGISTRY or <cache>/registry.sqlite3)");
  auto open = [path] {
    return std::make_unique<registry::Registry>(
        path->empty() ? registry::default_registry_path(realize::default_cache_dir()) : std::filesystem::path(*path));
  };

  cmd->add_subcommand("list", "one line per record: GPU, policy, problem, winner, time")->callback([open] {
    auto reg = open();
    for (const auto& r : reg->list()) {
      std::cout << fmt::format("{}  {} (cc {})  {}  {}  {} {:.4f} ms\n", r.created, r.key.gpu, r.key.cc,
                               r.key.policy, r.key.problem, r.winner, r.median_ms);
    }
  });
  auto out = std::make_shared<std::string>("-");
  auto* exp = cmd->add_subcommand("export", "write every record as a JSON array");
  exp->add_option("-o,--output", *out, "file to write (- for stdout)");
  exp->callback([open, out] {
    const std::string text = open()->export_json().dump(2) + "\n";
    if (*out == "-") std::cout << text;
    else write_file(*out, text);
  });
  auto in = std::make_shared<std::string>();
  auto* imp = cmd->add_subcommand("import", "add the records of an exported JSON array");
  imp->add_option("file", *in, "exported records")->required()->check(CLI::ExistingFile);
  imp->callback([open, in] {
    const auto records = parse_json_document(read_file(*in), *in);
    std::cout << "registry: imported " << open()->import_json(records) << " records\n";
  });
}

}  // namespace fact::cli
