#include "families/norm/problem.h"

#include <cmath>
#include <limits>

#include "base/checked_int.h"
#include "base/error.h"

using nlohmann::json;

namespace fact::realize {

std::string norm_kind_name(NormKind k) { return k == NormKind::layer ? "layer" : "rms"; }

namespace {

[[noreturn]] void bad(const std::string& what) { throw Error("norm problem: " + what); }

const json& field(const json& j, const char* key) {
  if (!j.contains(key)) bad(std::string("missing \"") + key + "\"");
  return j.at(key);
}

// A size: 1 .. 2^31 - 1 (the kernels count rows and columns in 32 bits).
int64_t positive(const json& j, const char* key) {
  const json& v = field(j, key);
  if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > std::numeric_limits<int32_t>::max())
    bad(std::string("\"") + key + "\" must be an integer from 1 to 2^31 - 1, got " + v.dump());
  return v.get<int64_t>();
}

bool flag(const json& j, const char* key) {
  const json& v = field(j, key);
  if (!v.is_boolean()) bad(std::string("\"") + key + "\" must be true or false, got " + v.dump());
  return v.get<bool>();
}

DType io(const json& j, const char* key) {
  const json& v = field(j, key);
  if (!v.is_string()) bad(std::string("\"") + key + "\" must be a dtype name, got " + v.dump());
  try {
    return parse_dtype(v.get<std::string>());
  } catch (const Error&) {
    bad(std::string("\"") + key + "\" " + v.dump() + " is not float32, bfloat16 or float16");
  }
}

int64_t stride(const json& s, const char* key, int64_t rows, int64_t cols, DType dtype) {
  const json& v = field(s, key);
  if (!v.is_number_integer()) bad(std::string("strides.") + key + " must be an integer, got " + v.dump());
  const int64_t st = v.get<int64_t>();
  if (rows > 1 && st < cols) bad(std::string("strides.") + key + " " + std::to_string(st) + " is below cols " + std::to_string(cols) + ": rows would overlap");
  // The operand's extent, (rows - 1) * stride + cols, which realization sizes buffers by.
  const std::string what = std::string("norm problem: strides.") + key;
  check_below_span(st, what);
  check_span_bytes(checked_add(checked_mul(rows - 1, st, what), cols, what), int64_t(dtype_bytes(dtype)), what);
  return st;
}

}  // namespace

NormProblem norm_problem_from_json(const json& j) {
  if (!j.is_object()) bad("not an object");
  if (j.value("kind", "") != "norm") bad("kind is not \"norm\"");
  NormProblem p;
  const json& n = field(j, "norm");
  if (n == "layer") p.norm = NormKind::layer;
  else if (n == "rms") p.norm = NormKind::rms;
  else bad("\"norm\" must be \"layer\" or \"rms\", got " + n.dump());
  p.rows = positive(j, "rows");
  p.cols = positive(j, "cols");
  p.dtype = io(j, "dtype");
  p.out_dtype = io(j, "out_dtype");
  p.weight = flag(j, "weight");
  p.bias = flag(j, "bias");
  p.residual = flag(j, "residual");
  if (p.weight || p.bias) p.param_dtype = io(j, "param_dtype");
  else if (!field(j, "param_dtype").is_null()) bad("param_dtype must be null without weight and bias");
  const json& e = field(j, "eps");
  if (!e.is_number() || !std::isfinite(e.get<double>()) || e.get<double>() < 0) bad("\"eps\" must be a finite number >= 0, got " + e.dump());
  p.eps = e.get<double>();
  const json& so = field(j, "sum_output");
  if (so.is_string() && !so.get<std::string>().empty()) {
    if (!p.residual) bad("sum_output without a residual");
    p.sum_output = so.get<std::string>();
  } else if (!so.is_null()) {
    bad("\"sum_output\" must be a value name or null, got " + so.dump());
  }
  const json& s = field(j, "strides");
  if (!s.is_object()) bad("\"strides\" must be an object");
  p.x_stride = stride(s, "x", p.rows, p.cols, p.dtype);
  if (p.residual) p.residual_stride = stride(s, "residual", p.rows, p.cols, p.dtype);
  else if (!field(s, "residual").is_null()) bad("strides.residual must be null without a residual");
  if (j.contains("form")) {
    if (!j.at("form").is_string()) bad("\"form\" must be a string");
    p.form = j.at("form").get<std::string>();
  }
  return p;
}

}  // namespace fact::realize
