// Printer of the canonical graph text. The parser (text_parser.cpp) reads exactly this.
#include <charconv>
#include <cmath>

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

std::string join_ints(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

std::string value_decl(const Value& v) {
  return "%" + v.name + " : " + (v.type ? format_type(*v.type) : std::string("none"));
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
  return std::string(short_name(t.dtype)) + "[" + join_ints(t.shape) + "]{" +
         join_ints(t.strides) + "}";
}

std::string format_arg(const Arg& arg) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, None>) return "none";
        else if constexpr (std::is_same_v<T, Ref>) return "%" + v.name;
        else if constexpr (std::is_same_v<T, int64_t>) return std::to_string(v);
        else if constexpr (std::is_same_v<T, double>) return format_double(v);
        else if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
        else if constexpr (std::is_same_v<T, std::string>) return quote(v);
        else if constexpr (std::is_same_v<T, Arg::List>) {
          std::string s = "[";
          for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + format_arg(v[i]);
          return s + "]";
        } else if constexpr (std::is_same_v<T, ScalarType>)
          return "dtype(" + std::string(short_name(v.dtype)) + ")";
        else if constexpr (std::is_same_v<T, Device>) return "device(" + quote(v.name) + ")";
        else if constexpr (std::is_same_v<T, TorchLayout>) return "layout(" + quote(v.name) + ")";
        else return "memory_format(" + quote(v.name) + ")";
      },
      arg.value);
}

std::string print_text(const Graph& g) {
  std::string out = "graph " + (is_plain_name(g.name) ? g.name : quote(g.name)) + " {\n";
  for (const auto& p : g.inputs) out += "  input %" + p.name + " : " + format_type(p.type) + "\n";
  for (const auto& p : g.params)
    out += "  " + std::string(kind_name(p.kind)) + " %" + p.name + " : " + format_type(p.type) +
           " = " + quote(p.target) + "\n";
  for (const auto& n : g.nodes) {
    out += "  ";
    if (n.outputs.empty()) out += "%" + n.name;  // a node without outputs prints its name
    for (size_t i = 0; i < n.outputs.size(); ++i) out += (i ? ", " : "") + value_decl(n.outputs[i]);
    out += " = " + n.op + "(";
    bool first = true;
    for (const auto& a : n.args) out += (std::exchange(first, false) ? "" : ", ") + format_arg(a);
    for (const auto& [k, a] : n.kwargs)
      out += (std::exchange(first, false) ? "" : ", ") + k + "=" + format_arg(a);
    out += ")\n";
  }
  out += "  output (";
  for (size_t i = 0; i < g.outputs.size(); ++i) out += (i ? ", %" : "%") + g.outputs[i];
  return out + ")\n}\n";
}

}  // namespace fact::graph
