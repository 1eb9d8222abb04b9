#include "engine/buckets.h"

#include <algorithm>
#include <optional>

#include "base/error.h"

namespace fact::realize {
namespace {

using json = nlohmann::json;

// The monomial a string field holds, when it is a size expression over `symbols`.
std::optional<graph::Monomial> size_expression(const json& v, const std::vector<graph::Symbol>& symbols) {
  if (!v.is_string()) return std::nullopt;
  try {
    graph::Monomial m = graph::parse_monomial(v.get<std::string>(), "");
    if (m.is_constant()) return std::nullopt;
    for (const auto& power : m.powers) {  // not a structured binding: clang 14 cannot capture one
      const std::string& s = power.first;
      if (std::none_of(symbols.begin(), symbols.end(), [&](const graph::Symbol& d) { return d.name == s; }))
        return std::nullopt;
    }
    return m;
  } catch (const Error&) {
    return std::nullopt;
  }
}

template <typename F>
void for_each_size(const json& j, const std::vector<graph::Symbol>& symbols, F&& f) {
  if (auto m = size_expression(j, symbols)) f(*m);
  if (j.is_structured())
    for (const auto& e : j) for_each_size(e, symbols, f);
}

}  // namespace

std::vector<Bucket> buckets_of(const graph::Symbol& s) {
  std::vector<Bucket> out;
  int64_t lo = s.min;
  for (int64_t hi : graph::bucket_bounds(s)) {
    if (hi < lo) continue;  // a bound below the symbol's min serves nothing
    out.push_back({lo, hi});
    lo = hi + 1;
  }
  return out;
}

std::vector<std::string> problem_symbols(const json& problem, const std::vector<graph::Symbol>& symbols) {
  std::vector<std::string> named;
  for_each_size(problem, symbols, [&](const graph::Monomial& m) {
    for (const auto& [s, pow] : m.powers)
      if (std::find(named.begin(), named.end(), s) == named.end()) named.push_back(s);
  });
  std::vector<std::string> out;
  for (const auto& s : symbols)
    if (std::find(named.begin(), named.end(), s.name) != named.end()) out.push_back(s.name);
  return out;
}

json specialize_problem(const json& problem, const std::vector<graph::Symbol>& symbols, const graph::SymbolValues& values) {
  if (auto m = size_expression(problem, symbols)) return graph::evaluate(*m, values);
  if (!problem.is_structured()) return problem;
  json out = problem;
  for (auto& e : out) e = specialize_problem(e, symbols, values);
  return out;
}

std::vector<graph::Symbol> plan_symbols(const json& plan) {
  if (!plan.contains("symbols")) return {};
  return graph::symbols_from_json(nlohmann::ordered_json::parse(plan.at("symbols").dump()), "plan symbols");
}

}  // namespace fact::realize
