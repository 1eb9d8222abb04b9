// Printer of the canonical graph text. The parser (text_parser.cpp) reads exactly this.
#include <charconv>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "graph/text.h"

namespace fact::graph {
namespace {

// A name prints bare when the parser's identifier rule reads it back unchanged.
bool is_plain_name(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') return false;
  return true;
}

std::string join_ints(const std::vector<int64_t>& v) { return fmt::format("{}", fmt::join(v, ",")); }

std::string value_decl(const Value& v) {
  return fmt::format("%{} : {}", v.name, v.type ? format_type(*v.type) : std::string("none"));
}

}  // namespace

std::string format_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest round trip
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default: out += c;
    }
  }
  return out + "\"";
}

std::string format_type(const TensorType& t) {
  return fmt::format("{}[{}]{{{}}}", short_name(t.dtype), join_ints(t.shape), join_ints(t.strides));
}

std::string format_arg(const Arg& arg) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, None>) return "none";
        else if constexpr (std::is_same_v<T, Ref>) return fmt::format("%{}", v.name);
        else if constexpr (std::is_same_v<T, int64_t>) return std::to_string(v);
        else if constexpr (std::is_same_v<T, double>) return format_double(v);
        else if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
        else if constexpr (std::is_same_v<T, std::string>) return quote(v);
        else if constexpr (std::is_same_v<T, Arg::List>) {
          std::vector<std::string> items;
          for (const Arg& a : v) items.push_back(format_arg(a));
          return fmt::format("[{}]", fmt::join(items, ", "));
        } else if constexpr (std::is_same_v<T, ScalarType>)
          return fmt::format("dtype({})", short_name(v.dtype));
        else if constexpr (std::is_same_v<T, Device>) return fmt::format("device({})", quote(v.name));
        else if constexpr (std::is_same_v<T, TorchLayout>) return fmt::format("layout({})", quote(v.name));
        else return fmt::format("memory_format({})", quote(v.name));
      },
      arg.value);
}

std::string print_text(const Graph& g) {
  std::string out = fmt::format("graph {} {{\n", is_plain_name(g.name) ? g.name : quote(g.name));
  for (const auto& p : g.inputs) out += fmt::format("  input %{} : {}\n", p.name, format_type(p.type));
  for (const auto& p : g.params)
    out += fmt::format("  {} %{} : {} = {}{}\n", kind_name(p.kind), p.name, format_type(p.type),
                       quote(p.target), p.value_class.empty() ? "" : " value=" + quote(p.value_class));
  for (const auto& n : g.nodes) {
    std::vector<std::string> outs, args;
    for (const auto& v : n.outputs) outs.push_back(value_decl(v));
    if (outs.empty()) outs.push_back(fmt::format("%{}", n.name));  // no outputs: the node's name
    for (const auto& a : n.args) args.push_back(format_arg(a));
    for (const auto& [k, a] : n.kwargs) args.push_back(fmt::format("{}={}", k, format_arg(a)));
    out += fmt::format("  {} = {}({})\n", fmt::join(outs, ", "), n.op, fmt::join(args, ", "));
  }
  std::vector<std::string> outputs;
  for (const auto& o : g.outputs) outputs.push_back(fmt::format("%{}", o));
  return out + fmt::format("  output ({})\n}}\n", fmt::join(outputs, ", "));
}

}  // namespace fact::graph
