#include "targets.h"

#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/json_format.h"
#include "compose/compose.h"
#include "discover/plan.h"
#include "engine/realize.h"
#include "graph/json.h"
#include "graph/text.h"
#include "registry/registry.h"

namespace fact::fuzz {

namespace {

// A failed invariant: not fact::Error, so no target swallows it.
// Printed too, since libFuzzer shows an uncaught exception as an abort without its message.
[[noreturn]] void broken(const std::string& what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what.c_str());
  throw std::logic_error("fuzz invariant: " + what);
}

void text_round_trip(const graph::Graph& g) {
  const std::string once = graph::print_text(g);
  graph::Graph again;
  try {
    again = graph::parse_text(once, "<printed>");
  } catch (const Error& e) {
    broken(std::string("a graph that reads does not read back from its text: ") + e.what() + "\n" + once);
  }
  if (graph::print_text(again) != once) broken("the text of a graph changes when read back:\n" + once);
}

template <typename F>
void answer_bad_input_with_errors(F&& read) {
  try {
    read();
  } catch (const Error&) {
    // The reader's answer to bad input.
  }
}

}  // namespace

void graph_json(std::string_view data) {
  answer_bad_input_with_errors([&] { text_round_trip(graph::graph_from_json_string(data)); });
}

void graph_text(std::string_view data) {
  answer_bad_input_with_errors([&] {
    const graph::Graph g = graph::parse_text(data, "<fuzz>");
    text_round_trip(g);
    const discover::Plan p = discover::make_plan(g, discover::builtin_rules(), Precision::tf32);
    discover::plan_to_json_string(p);
    discover::plan_to_text(p);
  });
}

void plan(std::string_view data) {
  answer_bad_input_with_errors([&] {
    const nlohmann::json doc = parse_json_document<nlohmann::json>(data, "plan");
    std::map<std::string, realize::BuildRequest> requests;
    realize::plan_candidates(doc, Precision::tf32, 2, std::nullopt, requests);
  });
}

void registry_import(std::string_view data) {
  answer_bad_input_with_errors([&] {
    const nlohmann::json records = parse_json_document<nlohmann::json>(data, "records");
    registry::Registry first(":memory:");
    first.import_json(records);
    const nlohmann::json exported = first.export_json();
    registry::Registry second(":memory:");
    try {
      second.import_json(exported);
    } catch (const Error& e) {
      broken(std::string("exported records do not import: ") + e.what());
    }
    if (second.export_json() != exported) broken("records change through export and import");
  });
}

void realized(std::string_view data) {
  answer_bad_input_with_errors([&] {
    const nlohmann::json doc = parse_json_document<nlohmann::json>(data, "plan and realized");
    if (!doc.is_object() || !doc.contains("plan") || !doc.contains("realized")) {
      throw Error("plan and realized: expected {\"plan\": ..., \"realized\": ...}");
    }
    std::vector<std::filesystem::path> objects;
    const compose::Composition c =
        compose::compose_documents(doc.at("plan"), doc.at("realized"), objects, "plan", "realized");
    if (!c.manifest.at("patterns").is_array() || c.manifest.at("patterns").size() != doc.at("plan").at("patterns").size()) {
      broken("the manifest does not hold one entry per plan pattern");
    }
    c.manifest.dump();
  });
}

const std::vector<Target>& targets() {
  static const std::vector<Target> all{
      {"graph_json", graph_json}, {"graph_text", graph_text}, {"plan", plan}, {"registry_import", registry_import},
      {"realized", realized}};
  return all;
}

}  // namespace fact::fuzz
