#include "families/rope/problem.h"

#include <algorithm>
#include <tuple>
#include <vector>

#include "base/checked_int.h"
#include "base/error.h"

using nlohmann::json;

namespace fact::realize {

std::string rope_form_name(RopeForm f) { return f == RopeForm::half ? "half" : "pairs"; }

namespace {

[[noreturn]] void bad(const std::string& what) { throw Error("rope problem: " + what); }

const json& field(const json& j, const char* key) {
  if (!j.contains(key)) bad(std::string("missing \"") + key + "\"");
  return j.at(key);
}

RopeStrides strides(const json& s, const char* key) {
  const json& v = field(s, key);
  if (!v.is_array() || v.size() != 3) bad(std::string("strides.") + key + " must be three integers, got " + v.dump());
  RopeStrides out{};
  for (size_t i = 0; i < 3; ++i) {
    if (!v[i].is_number_integer() || v[i].get<int64_t>() < 0)
      bad(std::string("strides.") + key + " must be three integers >= 0, got " + v.dump());
    out[i] = v[i].get<int64_t>();
    check_below_span(out[i], std::string("rope problem: strides.") + key + "[" + std::to_string(i) + "]");
  }
  return out;
}

// Whether strides `s` over dims (and a unit-stride last dim of `d`) address every element
// once: sorted by stride, each dim of size > 1 steps over the extent of those inside it.
bool one_to_one(const RopeProblem& p, const RopeStrides& s) {
  std::vector<std::pair<int64_t, int64_t>> dims{{1, p.head_dim}};
  for (size_t i = 0; i < 3; ++i)
    if (p.dims[i] > 1) dims.emplace_back(s[i], p.dims[i]);
  std::sort(dims.begin(), dims.end());
  int64_t span = 1;
  for (const auto& [stride, n] : dims) {
    if (stride < span) return false;
    span = checked_mul(stride, n, "rope problem: the span of strides.out");
  }
  return true;
}

}  // namespace

RopeProblem rope_problem_from_json(const json& j) {
  if (!j.is_object()) bad("not an object");
  if (j.value("kind", "") != "rope") bad("kind is not \"rope\"");
  RopeProblem p;
  const json& f = field(j, "form");
  if (f == "half") p.form = RopeForm::half;
  else if (f == "pairs") p.form = RopeForm::pairs;
  else bad("\"form\" must be \"half\" or \"pairs\", got " + f.dump());
  const json& d = field(j, "dims");
  if (!d.is_array() || d.size() != 3) bad("\"dims\" must be three positive integers, got " + d.dump());
  for (size_t i = 0; i < 3; ++i) {
    if (!d[i].is_number_integer() || d[i].get<int64_t>() <= 0) bad("\"dims\" must be three positive integers, got " + d.dump());
    p.dims[i] = d[i].get<int64_t>();
  }
  const json& h = field(j, "head_dim");
  if (!h.is_number_integer() || h.get<int64_t>() <= 0 || h.get<int64_t>() % 2)
    bad("\"head_dim\" must be a positive even integer, got " + h.dump());
  p.head_dim = h.get<int64_t>();
  const json& t = field(j, "dtype");
  try {
    p.dtype = parse_dtype(t.is_string() ? t.get<std::string>() : t.dump());
  } catch (const Error&) {
    bad("\"dtype\" " + t.dump() + " is not float32, bfloat16 or float16");
  }
  p.out_dtype = p.dtype;
  if (j.contains("out_dtype")) {
    const json& o = j.at("out_dtype");
    const std::string name = o.is_string() ? o.get<std::string>() : o.dump();
    if (name != to_string(p.dtype) && !(p.dtype == DType::f32 && (name == "bfloat16" || name == "float16")))
      bad("\"out_dtype\" " + o.dump() + " is neither dtype nor bfloat16/float16 with float32 inputs");
    p.out_dtype = parse_dtype(name);
  }
  const json& s = field(j, "strides");
  if (!s.is_object()) bad("\"strides\" must be an object");
  p.x = strides(s, "x");
  p.cos = strides(s, "cos");
  p.sin = strides(s, "sin");
  p.out = strides(s, "out");
  if (!one_to_one(p, p.out)) bad("strides.out " + s.at("out").dump() + " map two output elements to one address");
  // What realization sizes buffers and launches by fits int64 (each throws otherwise); out's
  // extent bounds rows * head_dim too, its elements having distinct addresses (one_to_one).
  for (auto [name, st, dtype] : {std::tuple{"x", &p.x, p.dtype}, {"cos", &p.cos, p.dtype}, {"sin", &p.sin, p.dtype},
                                 {"out", &p.out, p.out_dtype}})
    check_span_bytes(p.extent(*st), int64_t(dtype_bytes(dtype)), std::string("rope problem: ") + name);
  return p;
}

}  // namespace fact::realize
