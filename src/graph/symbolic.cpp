#include "graph/symbolic.h"

#include <cctype>
#include <algorithm>
#include <charconv>
#include <limits>

#include "base/checked_int.h"
#include "base/error.h"
#include "graph/json.h"

namespace fact::graph {
namespace {

using json = nlohmann::ordered_json;

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// A size: 1 .. 2^48 (no dimension of a tensor on a GPU passes it, kMaxSpanBytes).
int64_t positive_int(const json& j, const std::string& path) {
  if (!j.is_number_integer() || j.get<int64_t>() < 1 || j.get<int64_t>() > kMaxSpanBytes)
    throw Error(path + ": expected an integer from 1 to 2^48, got " + j.dump());
  return j.get<int64_t>();
}

// Replaces every size expression in `j` by its value at `values`: string elements of
// "shape" and "strides" arrays, and {"sym": expr} argument objects. With `values` null only
// checks that each expression parses and names declared symbols (`declared`).
void evaluate_in(json& j, const std::string& path, const SymbolValues* values, const SymbolValues& declared) {
  auto eval = [&](json& e, const std::string& p) {
    if (e.is_number_integer()) return;
    if (!e.is_string()) throw Error(p + ": expected an integer or a size expression, got " + e.dump());
    const Monomial m = parse_monomial(e.get<std::string>(), p);
    for (const auto& [s, pow] : m.powers)
      if (!declared.contains(s)) throw Error(p + ": symbol '" + s + "' is not declared in \"symbols\"");
    if (values) e = evaluate(m, *values);
  };
  if (j.is_object()) {
    if (j.size() == 1 && j.contains("sym")) {
      json& e = j.at("sym");
      if (!e.is_string()) throw Error(path + ".sym: expected a size expression string");
      eval(e, path + ".sym");
      if (values) j = json(e);
      return;
    }
    for (auto& [key, v] : j.items()) {
      const std::string p = path.empty() ? key : path + "." + key;
      if ((key == "shape" || key == "strides") && v.is_array()) {
        for (size_t i = 0; i < v.size(); ++i) eval(v[i], p + "[" + std::to_string(i) + "]");
      } else if (key != "symbols") {
        evaluate_in(v, p, values, declared);
      }
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) evaluate_in(j[i], path + "[" + std::to_string(i) + "]", values, declared);
  }
}

}  // namespace

Monomial parse_monomial(std::string_view text, std::string_view where) {
  auto bad = [&](const std::string& why) -> Error {
    return Error(std::string(where) + ": size expression '" + std::string(text) + "' " + why +
                 " (a size is an integer or a product of integers and symbols, e.g. 512*B)");
  };
  Monomial m;
  size_t pos = 0;
  if (text.empty()) throw bad("is empty");
  while (pos <= text.size()) {
    const size_t star = text.find('*', pos);
    std::string_view factor = text.substr(pos, star == std::string_view::npos ? std::string_view::npos : star - pos);
    while (!factor.empty() && factor.front() == ' ') factor.remove_prefix(1);
    while (!factor.empty() && factor.back() == ' ') factor.remove_suffix(1);
    if (factor.empty()) throw bad("has an empty factor");
    if (std::isdigit(static_cast<unsigned char>(factor[0]))) {
      int64_t v = 0;
      auto [end, ec] = std::from_chars(factor.data(), factor.data() + factor.size(), v);
      if (ec != std::errc() || end != factor.data() + factor.size() || v < 1) throw bad("has a factor that is not a positive integer");
      m.coeff = checked_mul(m.coeff, v, where);
    } else if (is_identifier(factor)) {
      ++m.powers[std::string(factor)];
    } else {
      throw bad("has factor '" + std::string(factor) + "'");
    }
    if (star == std::string_view::npos) break;
    pos = star + 1;
  }
  return m;
}

std::string format_monomial(const Monomial& m) {
  std::string out = m.coeff != 1 || m.powers.empty() ? std::to_string(m.coeff) : "";
  for (const auto& [s, pow] : m.powers)
    for (int i = 0; i < pow; ++i) out += (out.empty() ? "" : "*") + s;
  return out;
}

int64_t evaluate(const Monomial& m, const SymbolValues& values) {
  int64_t v = m.coeff;
  for (const auto& [s, pow] : m.powers) {
    auto it = values.find(s);
    if (it == values.end()) throw Error("size expression " + format_monomial(m) + ": no value for symbol '" + s + "'");
    for (int i = 0; i < pow; ++i) v = checked_mul(v, it->second, "size expression " + format_monomial(m));
  }
  return v;
}

std::vector<Symbol> symbols_from_json(const json& j, const std::string& path) {
  if (!j.is_object()) throw Error(path + ": expected an object of symbols");
  std::vector<Symbol> out;
  for (const auto& [name, d] : j.items()) {
    const std::string p = path + "." + name;
    if (!is_identifier(name)) throw Error(p + ": a symbol name must be an identifier");
    if (!d.is_object()) throw Error(p + ": expected an object");
    Symbol s;
    s.name = name;
    s.min = d.contains("min") ? positive_int(d.at("min"), p + ".min") : 1;
    if (d.contains("max") && !d.at("max").is_null()) s.max = positive_int(d.at("max"), p + ".max");
    if (s.max && *s.max < s.min) throw Error(p + ": max " + std::to_string(*s.max) + " < min " + std::to_string(s.min));
    auto in_range = [&](int64_t v, const std::string& q) {
      if (v < s.min || (s.max && v > *s.max))
        throw Error(q + ": " + std::to_string(v) + " is outside the symbol's range [" + std::to_string(s.min) + ", " +
                    (s.max ? std::to_string(*s.max) : "inf") + "]");
    };
    if (!d.contains("seen") || !d.at("seen").is_array() || d.at("seen").empty())
      throw Error(p + ".seen: expected a non-empty list of the sizes seen");
    for (size_t i = 0; i < d.at("seen").size(); ++i) {
      const std::string q = p + ".seen[" + std::to_string(i) + "]";
      s.seen.push_back(positive_int(d.at("seen")[i], q));
      in_range(s.seen.back(), q);
    }
    if (d.contains("buckets") && !d.at("buckets").is_null()) {
      const json& b = d.at("buckets");
      if (!b.is_array() || b.empty()) throw Error(p + ".buckets: expected null or a non-empty list of upper bounds");
      for (size_t i = 0; i < b.size(); ++i) {
        const std::string q = p + ".buckets[" + std::to_string(i) + "]";
        s.buckets.push_back(positive_int(b[i], q));
        in_range(s.buckets.back(), q);
        if (i && s.buckets[i] <= s.buckets[i - 1]) throw Error(q + ": bucket bounds must increase strictly");
      }
    }
    if (d.contains("bound") && !d.at("bound").is_null()) s.bound = positive_int(d.at("bound"), p + ".bound");
    out.push_back(std::move(s));
  }
  return out;
}

json symbols_to_json(const std::vector<Symbol>& symbols) {
  json out = json::object();
  for (const Symbol& s : symbols) {
    json d{{"min", s.min}, {"max", s.max ? json(*s.max) : json(nullptr)}, {"seen", s.seen},
           {"buckets", s.buckets.empty() ? json(nullptr) : json(s.buckets)}};
    if (s.bound) d["bound"] = *s.bound;
    out[s.name] = std::move(d);
  }
  return out;
}

int64_t bucket_bound(const Symbol& s) {
  int64_t b = s.bound ? *s.bound : (s.max ? std::min(*s.max, kDefaultBucketBound) : kDefaultBucketBound);
  for (int64_t v : s.seen) b = std::max(b, v);
  return b;
}

std::vector<int64_t> bucket_bounds(const Symbol& s) {
  if (!s.buckets.empty()) return s.buckets;
  const int64_t bound = bucket_bound(s);
  int64_t p = 1;
  while (p < *std::min_element(s.seen.begin(), s.seen.end())) p *= 2;
  std::vector<int64_t> out;
  for (; p < bound; p *= 2) out.push_back(p);
  out.push_back(bound);
  return out;
}

const Symbol* SymbolicGraph::symbol(std::string_view n) const {
  for (const Symbol& s : symbols)
    if (s.name == n) return &s;
  return nullptr;
}

SymbolValues SymbolicGraph::hints() const {
  SymbolValues v;
  for (const Symbol& s : symbols) v[s.name] = s.hint();
  return v;
}

bool has_symbols(const json& j) {
  return j.is_object() && j.contains("symbols") && j.at("symbols").is_object() && !j.at("symbols").empty();
}

SymbolicGraph symbolic_from_json(const json& j) {
  if (!j.is_object() || j.value("format", "") != "fact.graph") throw Error("graph JSON: format: expected \"fact.graph\"");
  if (!j.contains("version") || j.at("version") != 2)
    throw Error("graph JSON: version: a graph with symbols is version 2, found " + j.value("version", json()).dump());
  SymbolicGraph g;
  g.name = j.value("name", "");
  g.symbols = symbols_from_json(j.at("symbols"), "symbols");
  g.json = j;
  SymbolValues declared = g.hints();
  json copy = j;
  evaluate_in(copy, "", nullptr, declared);  // every expression names declared symbols
  specialize(g, declared);                   // and the graph at the hints is well formed
  return g;
}

Graph specialize(const SymbolicGraph& g, const SymbolValues& values) {
  for (const Symbol& s : g.symbols) {
    auto it = values.find(s.name);
    if (it == values.end()) throw Error("specialize " + g.name + ": no value for symbol " + s.name);
    if (it->second < s.min || (s.max && it->second > *s.max))
      throw Error("specialize " + g.name + ": " + s.name + "=" + std::to_string(it->second) + " is outside its range [" +
                  std::to_string(s.min) + ", " + (s.max ? std::to_string(*s.max) : "inf") + "]");
  }
  json j = g.json;
  evaluate_in(j, "", &values, values);
  j.erase("symbols");
  j["version"] = 1;
  return graph_from_json(j);
}

SymbolValues parse_symbol_values(std::string_view text) {
  SymbolValues out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    std::string_view item = text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    const size_t eq = item.find('=');
    int64_t v = 0;
    if (eq != std::string_view::npos) {
      auto [end, ec] = std::from_chars(item.data() + eq + 1, item.data() + item.size(), v);
      if (ec == std::errc() && end == item.data() + item.size() && is_identifier(item.substr(0, eq)) && v >= 1) {
        out[std::string(item.substr(0, eq))] = v;
        if (comma == std::string_view::npos) break;
        pos = comma + 1;
        continue;
      }
    }
    throw Error("symbol values: expected NAME=SIZE[,NAME=SIZE...], got '" + std::string(text) + "'");
  }
  return out;
}

}  // namespace fact::graph
