#include "graph/json.h"

#include <cmath>
#include <limits>

#include "base/error.h"
#include "base/nesting.h"
#include "base/json_format.h"
#include "base/version.h"

namespace fact::graph {
namespace {

using json = nlohmann::ordered_json;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error((path.empty() ? std::string("graph JSON") : path) + ": " + what);
}

const json& field(const json& j, const char* key, const std::string& path) {
  if (!j.is_object()) fail(path, "expected an object");
  auto it = j.find(key);
  if (it == j.end()) fail(path, std::string("missing \"") + key + "\"");
  return *it;
}

std::string string_field(const json& j, const char* key, const std::string& path) {
  const json& v = field(j, key, path);
  if (!v.is_string()) fail(path + "." + key, "expected a string");
  return v.get<std::string>();
}

const json& array_field(const json& j, const char* key, const std::string& path) {
  const json& v = field(j, key, path);
  if (!v.is_array()) fail(path + "." + key, "expected an array");
  return v;
}

std::vector<int64_t> int_list(const json& j, const std::string& path) {
  if (!j.is_array()) fail(path, "expected an array of integers");
  std::vector<int64_t> out;
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_number_integer()) fail(path + "[" + std::to_string(i) + "]", "expected an integer");
    out.push_back(j[i].get<int64_t>());
  }
  return out;
}

TensorType type_from_json(const json& j, const std::string& path) {
  TensorType t;
  try {
    t.dtype = dtype_from_torch_name(string_field(j, "dtype", path));
  } catch (const Error& e) {
    fail(path + ".dtype", e.what());
  }
  t.shape = int_list(field(j, "shape", path), path + ".shape");
  t.strides = int_list(field(j, "strides", path), path + ".strides");
  if (t.shape.size() != t.strides.size())
    fail(path, "shape and strides have different lengths");
  return t;
}

json type_to_json(const TensorType& t) {
  return json{{"dtype", torch_name(t.dtype)}, {"shape", t.shape}, {"strides", t.strides}};
}

Placeholder placeholder_from_json(const json& j, const std::string& path, bool is_input) {
  Placeholder p;
  p.name = string_field(j, "name", path);
  std::string kind = string_field(j, "kind", path);
  auto k = kind_from_name(kind);
  if (!k || (*k == PlaceholderKind::user_input) != is_input)
    fail(path + ".kind", "'" + kind + "' is not a valid kind here (expected " +
                             (is_input ? "user_input" : "parameter, buffer or constant") + ")");
  p.kind = *k;
  if (!is_input) p.target = string_field(j, "target", path);
  p.type = type_from_json(field(j, "type", path), path + ".type");
  if (auto it = j.find("value"); it != j.end()) {
    if (!it->is_string() || it->get<std::string>().empty())
      fail(path + ".value", "expected a value class name (a non-empty string)");
    p.value_class = it->get<std::string>();
  }
  return p;
}

json placeholder_to_json(const Placeholder& p) {
  json j{{"name", p.name}, {"kind", kind_name(p.kind)}};
  if (p.kind != PlaceholderKind::user_input) j["target"] = p.target;
  j["type"] = type_to_json(p.type);
  if (!p.value_class.empty()) j["value"] = p.value_class;
  return j;
}

std::string ref_name(const json& j, const std::string& path) {
  if (!j.is_object() || !j.contains("ref") || !j["ref"].is_string())
    fail(path, "expected a value reference {\"ref\": \"name\"}");
  return j["ref"].get<std::string>();
}

}  // namespace

Arg arg_from_json(const json& j, const std::string& path) {
  switch (j.type()) {
    case json::value_t::null: return None{};
    case json::value_t::boolean: return j.get<bool>();
    case json::value_t::number_integer: return j.get<int64_t>();
    case json::value_t::number_unsigned:
      if (j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail(path, "integer does not fit in int64");
      return j.get<int64_t>();
    case json::value_t::number_float: return j.get<double>();
    case json::value_t::string: return j.get<std::string>();
    case json::value_t::array: {
      Arg::List list;
      for (size_t i = 0; i < j.size(); ++i)
        list.push_back(arg_from_json(j[i], path + "[" + std::to_string(i) + "]"));
      return list;
    }
    case json::value_t::object: {
      if (j.size() != 1) fail(path, "an argument object has exactly one key");
      // Not a structured binding: clang 14 (the sanitizer build) cannot capture one.
      const std::string key = j.begin().key();
      const json& v = j.begin().value();
      auto str = [&] {
        if (!v.is_string()) fail(path + "." + key, "expected a string");
        return v.get<std::string>();
      };
      if (key == "ref") return Ref{str()};
      if (key == "dtype") {
        try {
          return ScalarType{dtype_from_torch_name(str())};
        } catch (const Error& e) {
          fail(path + ".dtype", e.what());
        }
      }
      if (key == "device") return Device{str()};
      if (key == "layout") return TorchLayout{str()};
      if (key == "memory_format") return MemoryFormat{str()};
      if (key == "float") {
        std::string s = str();
        if (s == "inf") return std::numeric_limits<double>::infinity();
        if (s == "-inf") return -std::numeric_limits<double>::infinity();
        if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
        fail(path + ".float", "expected \"inf\", \"-inf\" or \"nan\", got \"" + s + "\"");
      }
      fail(path, "unknown argument object key \"" + key + "\"");
    }
    default: fail(path, "unsupported JSON value");
  }
}

json arg_to_json(const Arg& arg) {
  return std::visit(
      [](const auto& v) -> json {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, None>) return nullptr;
        else if constexpr (std::is_same_v<T, Ref>) return json{{"ref", v.name}};
        else if constexpr (std::is_same_v<T, double>) {
          if (std::isnan(v)) return json{{"float", "nan"}};
          if (std::isinf(v)) return json{{"float", v > 0 ? "inf" : "-inf"}};
          return v;
        } else if constexpr (std::is_same_v<T, Arg::List>) {
          json a = json::array();
          for (const Arg& e : v) a.push_back(arg_to_json(e));
          return a;
        } else if constexpr (std::is_same_v<T, ScalarType>) return json{{"dtype", torch_name(v.dtype)}};
        else if constexpr (std::is_same_v<T, Device>) return json{{"device", v.name}};
        else if constexpr (std::is_same_v<T, TorchLayout>) return json{{"layout", v.name}};
        else if constexpr (std::is_same_v<T, MemoryFormat>) return json{{"memory_format", v.name}};
        else return v;  // int64_t, bool, std::string
      },
      arg.value);
}

Graph graph_from_json(const json& j) {
  if (!j.is_object()) fail("", "expected a JSON object");
  if (string_field(j, "format", "") != "fact.graph")
    fail("format", "expected \"fact.graph\"");
  const json& version = field(j, "version", "");
  if (!version.is_number_integer() || version.get<int>() < 1 || version.get<int>() > kSymbolicGraphFormatVersion)
    fail("version", "unsupported version " + version.dump() + " (this build reads 1 and " +
                        std::to_string(kSymbolicGraphFormatVersion) + ")");
  if (j.contains("symbols") && !(j.at("symbols").is_object() && j.at("symbols").empty()))
    fail("symbols", "the graph has symbolic sizes: plan it with `factc discover`, or specialize it "
                    "(`factc print --at NAME=SIZE`) to read it as a static graph");
  Graph g;
  g.name = string_field(j, "name", "");
  const json& inputs = array_field(j, "inputs", "");
  for (size_t i = 0; i < inputs.size(); ++i)
    g.inputs.push_back(placeholder_from_json(inputs[i], "inputs[" + std::to_string(i) + "]", true));
  const json& params = array_field(j, "params", "");
  for (size_t i = 0; i < params.size(); ++i)
    g.params.push_back(placeholder_from_json(params[i], "params[" + std::to_string(i) + "]", false));
  const json& nodes = array_field(j, "nodes", "");
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string path = "nodes[" + std::to_string(i) + "]";
    const json& jn = nodes[i];
    Node n;
    n.name = string_field(jn, "name", path);
    n.op = string_field(jn, "op", path);
    const json& args = array_field(jn, "args", path);
    for (size_t a = 0; a < args.size(); ++a)
      n.args.push_back(arg_from_json(args[a], path + ".args[" + std::to_string(a) + "]"));
    const json& kwargs = field(jn, "kwargs", path);
    if (!kwargs.is_object()) fail(path + ".kwargs", "expected an object");
    for (const auto& [k, v] : kwargs.items())
      n.kwargs.emplace_back(k, arg_from_json(v, path + ".kwargs." + k));
    const json& outs = array_field(jn, "outputs", path);
    for (size_t o = 0; o < outs.size(); ++o) {
      const std::string opath = path + ".outputs[" + std::to_string(o) + "]";
      Value v;
      v.name = string_field(outs[o], "name", opath);
      const json& t = field(outs[o], "type", opath);
      if (!t.is_null()) v.type = type_from_json(t, opath + ".type");
      n.outputs.push_back(std::move(v));
    }
    g.nodes.push_back(std::move(n));
  }
  const json& outputs = array_field(j, "outputs", "");
  for (size_t i = 0; i < outputs.size(); ++i)
    g.outputs.push_back(ref_name(outputs[i], "outputs[" + std::to_string(i) + "]"));
  validate(g);
  return g;
}

Graph graph_from_json_string(std::string_view text) {
  return graph_from_json(parse_json_document<json>(text, "graph JSON"));
}

json graph_to_json(const Graph& g) {
  json j{{"format", "fact.graph"}, {"version", kGraphFormatVersion}, {"name", g.name}};
  json inputs = json::array(), params = json::array(), nodes = json::array(),
       outputs = json::array();
  for (const auto& p : g.inputs) inputs.push_back(placeholder_to_json(p));
  for (const auto& p : g.params) params.push_back(placeholder_to_json(p));
  for (const auto& n : g.nodes) {
    json args = json::array(), kwargs = json::object(), outs = json::array();
    for (const auto& a : n.args) args.push_back(arg_to_json(a));
    for (const auto& [k, a] : n.kwargs) kwargs[k] = arg_to_json(a);
    for (const auto& v : n.outputs)
      outs.push_back(json{{"name", v.name}, {"type", v.type ? type_to_json(*v.type) : json(nullptr)}});
    nodes.push_back(json{{"name", n.name}, {"op", n.op}, {"args", std::move(args)},
                         {"kwargs", std::move(kwargs)}, {"outputs", std::move(outs)}});
  }
  for (const auto& o : g.outputs) outputs.push_back(json{{"ref", o}});
  j["inputs"] = std::move(inputs);
  j["params"] = std::move(params);
  j["nodes"] = std::move(nodes);
  j["outputs"] = std::move(outputs);
  return j;
}

std::string graph_to_json_string(const Graph& g) { return pretty_json(graph_to_json(g)); }

}  // namespace fact::graph
