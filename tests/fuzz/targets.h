// The readers FACT's fuzzers drive (tests/fuzz/README.md): each takes any bytes and returns
// normally when the reader either reads them or answers with fact::Error, the answer to bad
// input. Anything else is a finding: another exception (thrown on, so libFuzzer reports it as
// a crash and the corpus test fails), a crash, a leak, undefined behaviour, or a document
// that reads but does not survive its own round trip (std::logic_error naming the step).
#pragma once

#include <string_view>
#include <vector>

namespace fact::fuzz {

/// Graph JSON (docs/02-graph-format.md) through graph_from_json_string; a graph it reads must
/// print as text, read back, and print to the same text again.
void graph_json(std::string_view data);

/// Graph text through parse_text, the same round trip, then discovery (make_plan under tf32
/// with the built-in rules) and the plan's JSON and text forms.
void graph_text(std::string_view data);

/// plan.json through the strict JSON reader and plan_candidates (every family's problem
/// reader and code generator; at most 2 kernels per pattern; nothing is compiled).
void plan(std::string_view data);

/// A `factc registry import` file through the strict reader and Registry::import_json into an
/// in-memory database; what imports must export, import again and export to the same JSON.
void registry_import(std::string_view data);

/// A plan and its realized.json, {"plan": ..., "realized": ...}, through composition's
/// reader (compose_documents: the checks, each family's compose_winner, the report); what
/// composes has one manifest entry per plan pattern.
void realized(std::string_view data);

struct Target {
  const char* name;  // also the corpus folder tests/fuzz/corpus/<name>/ and the binary fuzz_<name>
  void (*run)(std::string_view);
};

/// The five targets above, in that order.
const std::vector<Target>& targets();

}  // namespace fact::fuzz
