#include "families/gemm/epilogue/evt_codegen.h"

#include <map>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "base/error.h"
#include "engine/embedded_templates.h"
#include "families/gemm/epilogue/op_table.h"
#include "families/gemm/epilogue/program.h"
#include "families/gemm/epilogue/ranges.h"

using nlohmann::json;

namespace fact::realize {
namespace {

// Unary ops as fp32 expressions of x: the table's `evt` (op_table.h), PyTorch's definitions
// (docs/03-rules.md), and its CODEGEN ops. sigmoid's reciprocal is __fdividef (2 ulp; 0 for
// a denominator beyond 2^126, where the exact value is below 1e-38): an IEEE division
// (div.rn / rcp.rn) compiles to a slow-path subroutine call, which in a cooperative
// kernel's epilogue cost 40 us on an 8 M-element tile set (docs/perf-notes.md, v5).
// erf_bounded / gelu_bounded: erf of an argument proven to lie within |z| <= 1
// (ranges.h), through bounded_math.h. An op whose `evt` is nullptr is rewritten (desugar).
const std::map<std::string, std::string>& unary_exprs() {
#define FACT_EPI_EVT_UNARY(name, aten, form, eval, evt, ...) {#name, evt},
#define FACT_EPI_EVT_CODEGEN(name, evt) {#name, evt},
  static const std::map<std::string, std::string> f = [] {
    std::map<std::string, std::string> all;
    for (const auto& [name, evt] : std::initializer_list<std::pair<const char*, const char*>>{
             FACT_EPILOGUE_OPS(FACT_EPI_NONE, FACT_EPI_EVT_UNARY, FACT_EPI_NONE, FACT_EPI_EVT_CODEGEN)})
      if (evt) all.emplace(name, evt);
    return all;
  }();
#undef FACT_EPI_EVT_UNARY
#undef FACT_EPI_EVT_CODEGEN
  return f;
}

// Binary ops: the table's functors — CUTLASS's exact IEEE ones, and Fact* functors with the
// table's `evt_body` (max/min that propagate NaN, as torch.clamp and F.hardtanh).
struct BinaryFunctor {
  std::string name;
  const char* body;  // nullptr: CUTLASS's
};
const std::map<std::string, BinaryFunctor>& binary_functors() {
#define FACT_EPI_EVT_BINARY(name, aten, eval, range, evt, evt_body, cost) {#name, {evt, evt_body}},
  static const std::map<std::string, BinaryFunctor> f{
      FACT_EPILOGUE_OPS(FACT_EPI_EVT_BINARY, FACT_EPI_NONE, FACT_EPI_NONE, FACT_EPI_NONE)};
#undef FACT_EPI_EVT_BINARY
  return f;
}

std::string functor_name(const std::string& op) {
  if (auto it = binary_functors().find(op); it != binary_functors().end()) return it->second.name;
  std::string n = "Fact";
  bool up = true;
  for (char c : op) {
    if (c == '_') { up = true; continue; }
    n += up ? char(std::toupper(c)) : c;
    up = false;
  }
  return n;  // gelu_tanh -> FactGeluTanh
}

json op(const std::string& name, std::vector<json> args) { return {{"op", name}, {"args", std::move(args)}}; }
json scalar(double v) { return {{"scalar", v}}; }

// Rewrites ops without a node of their own into primitive ones (the CLAMP rows, and the
// rows whose `evt` is nullptr: leaky_relu, pow 2/3). Throws fact::Error for what cannot be
// generated.
json desugar(const json& t) {
  if (!t.contains("op")) return t;
  const std::string name = t.at("op");
  std::vector<json> a;
  for (const auto& c : t.at("args")) a.push_back(c.is_null() ? c : desugar(c));
  if (const EpilogueTreeOp* t = epilogue_tree_op(name); t && t->form == EpilogueTreeOp::Form::bounds) {
    json x = a[0];
    if (!a[1].is_null()) x = op("max", {x, a[1]});
    if (!a[2].is_null()) x = op("min", {x, a[2]});
    return x;
  }
  if (name == "leaky_relu") {
    return op("add", {op("max", {a[0], scalar(0.0)}), op("mul", {op("min", {a[0], scalar(0.0)}), a[1]})});
  }
  // A division by a number is a multiply by its reciprocal (exact for powers of two, within
  // 1.5 ulp otherwise): a run-time scalar divisor would be an IEEE division per element.
  if (name == "div" && a[1].contains("scalar") && a[1].at("scalar").get<double>() != 0.0) {
    return op("mul", {a[0], scalar(1.0 / a[1].at("scalar").get<double>())});
  }
  if (name == "pow") {
    const double e = a[1].value("scalar", 0.0);
    if (e == 2.0) return op("mul", {a[0], a[0]});
    if (e == 3.0) return op("mul", {op("mul", {a[0], a[0]}), a[0]});
    throw Error(fmt::format("epilogue: pow with exponent {} is not generated (2 and 3 are)", e));
  }
  if (!binary_functors().count(name) && !unary_exprs().count(name)) {
    throw Error("epilogue: op '" + name + "' has no EVT node");
  }
  return op(name, a);
}

// An input leaf's kind and ABI slot: "bias" -> ("n", -1); "cI" -> (broadcast[cI], I).
std::pair<std::string, int> input_slot(const std::string& name, const json& broadcast) {
  if (name == "bias") return {"n", -1};
  const int slot = epilogue_input_slot(name);
  if (slot < 0) throw Error("epilogue: input '" + name + "' is not bias or c0..c3 (at most four external inputs)");
  if (!broadcast.is_object() || !broadcast.contains(name)) throw Error("epilogue: input " + name + " has no broadcast kind");
  const std::string kind = broadcast.at(name);
  if (kind != "n" && kind != "m" && kind != "mn") {
    throw Error("epilogue: input " + name + " broadcasts as '" + kind + "' (n, m or mn are generated)");
  }
  return {kind, slot};
}

struct Emitter {
  explicit Emitter(const json& b) : broadcast(b) {}
  const json& broadcast;
  std::string decls;
  int next = 0;
  std::set<std::string> functors;  // Fact* functors the tree uses
  unsigned input_mask = 0, tensor_mask = 0;

  // Returns the type name and the Arguments initializer of `t`.
  std::pair<std::string, std::string> emit(const json& t, bool root) {
    if (t.contains("acc")) return {"EvtAcc", "{}"};
    if (t.contains("scalar")) return {"EvtScalar", fmt::format("{{{{float({:.17g})}}}}", t.at("scalar").get<double>())};
    if (t.contains("input")) {
      const auto [kind, slot] = input_slot(t.at("input"), broadcast);
      const std::string ptr = slot < 0 ? "p.bias" : fmt::format("p.epi[{}]", slot);
      if (slot >= 0) input_mask |= 1u << slot;
      if (kind == "mn") {
        tensor_mask |= 1u << slot;
        return {"EvtTensor", fmt::format("{{static_cast<const ElementEpi*>({}), ElementEpi(0), aux_stride(p.epi_ld[{}], p.epi_batch_stride[{}])}}", ptr, slot, slot)};
      }
      return {kind == "n" ? "EvtRowVector" : "EvtColVector", fmt::format("{{static_cast<const ElementEpi*>({})}}", ptr)};
    }
    const std::string name = t.at("op");
    const std::string fn = functor_name(name);
    if (fn.rfind("Fact", 0) == 0) functors.insert(name);
    std::vector<std::string> types, inits;
    for (const auto& c : t.at("args")) {
      auto [ty, init] = emit(c, false);
      types.push_back(ty);
      inits.push_back(init);
    }
    const std::string me = root ? "FusionOp" : fmt::format("Evt{}", next++);
    std::string children;
    for (const auto& ty : types) children += ", " + ty;
    decls += fmt::format("using {} = cutlass::epilogue::fusion::Sm90EVT<{}<{}>{}>;\n", me,
                         root ? "EvtRoot" : "EvtCompute", fn, children);
    std::string init = "{";
    for (const auto& i : inits) init += i + ", ";
    return {me, init + "{}}"};
  }
};

// A functor `name` computing `expr` of (a, b) or of x, for one value and (element by
// element) for a cutlass::Array fragment, as Sm90Compute calls it.
std::string functor(const std::string& name, bool binary, const std::string& expr) {
  const std::string params = binary ? "T const& a, T const& b" : "T const& x";
  const std::string aparams = binary ? "cutlass::Array<T, N> const& a, cutlass::Array<T, N> const& b"
                                     : "cutlass::Array<T, N> const& x";
  const std::string call = binary ? "a[i], b[i]" : "x[i]";
  return fmt::format(R"(template <class T>
struct {0} {{
  CUTLASS_HOST_DEVICE T operator()({1}) const {{ return {2}; }}
}};
template <class T, int N>
struct {0}<cutlass::Array<T, N>> {{
  CUTLASS_HOST_DEVICE cutlass::Array<T, N> operator()({3}) const {{
    cutlass::Array<T, N> r;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < N; ++i) r[i] = {0}<T>{{}}({4});
    return r;
  }}
}};
)", name, params, expr, aparams, call);
}

}  // namespace

EvtSource render_evt(const json& tree, const json& broadcast) {
  if (!tree.contains("op")) throw Error("epilogue: the expression has no op");
  Emitter e(broadcast);
  std::vector<std::string> notes;
  json simplified = simplify_epilogue_by_range(tree, &notes);
  if (!simplified.contains("op")) simplified = tree, notes.clear();  // a tail that folds to a leaf keeps its ops
  auto [type, init] = e.emit(desugar(simplified), true);
  std::string d = "// D = " + tree.dump() +
                  "\n// as an Epilogue Visitor Tree computing in fp32 (generated by src/realize/evt_codegen.cpp).\n";
  for (const auto& n : notes) d += "// By range (src/realize/evt_ranges.cpp): " + n + ".\n";
  if (e.functors.count("erf_bounded") || e.functors.count("gelu_bounded")) d += embedded::kBoundedMathHeader;
  d += fmt::format("constexpr unsigned kEpiInputMask = {}u, kEpiTensorMask = {}u;  // bit I: reads epi[I] / as a tensor\n",
                   e.input_mask, e.tensor_mask);
  for (const auto& name : e.functors) {
    auto binary = binary_functors().find(name);
    if (binary != binary_functors().end()) d += functor(binary->second.name, true, binary->second.body);
    else d += functor(functor_name(name), false, unary_exprs().at(name));
  }
  d += R"(using EvtAcc = cutlass::epilogue::fusion::Sm90AccFetch;
using EvtScalar = cutlass::epilogue::fusion::Sm90ScalarBroadcast<ElementCompute>;
// Vectors along N and along M: swapped when the kernel computes the transposed problem D^T.
using EvtNVector = cutlass::epilogue::fusion::Sm90RowBroadcast<0, TileShape, ElementEpi, ElementCompute>;
using EvtMVector = cutlass::epilogue::fusion::Sm90ColBroadcast<0, TileShape, ElementEpi, ElementCompute>;
using EvtRowVector = cute::conditional_t<kSwapAB, EvtMVector, EvtNVector>;
using EvtColVector = cute::conditional_t<kSwapAB, EvtNVector, EvtMVector>;
// A tensor of D's shape (N contiguous), read from global memory in 16-byte vectors.
using EvtTensorStride = cute::conditional_t<kSwapAB, cute::Stride<cute::_1, int64_t, int64_t>,
                                            cute::Stride<int64_t, cute::_1, int64_t>>;
using EvtTensor = cutlass::epilogue::fusion::Sm90AuxLoad<0, void, ElementEpi, EvtTensorStride, void, void,
                                                         16 / int(sizeof(ElementEpi)), false>;
[[maybe_unused]] EvtTensorStride aux_stride(int64_t ld, int64_t batch_stride) {
  EvtTensorStride s{};
  cute::get<kSwapAB ? 1 : 0>(s) = ld;
  cute::get<2>(s) = batch_stride;
  return s;
}
template <template <class> class Fn>
using EvtCompute = cutlass::epilogue::fusion::Sm90Compute<Fn, ElementCompute, ElementCompute,
                                                          cutlass::FloatRoundStyle::round_to_nearest>;
template <template <class> class Fn>
using EvtRoot = cutlass::epilogue::fusion::Sm90Compute<Fn, ElementD, ElementCompute,
                                                       cutlass::FloatRoundStyle::round_to_nearest>;
)";
  d += e.decls;
  return {d, "  args.epilogue.thread = " + init + ";\n"};
}

EvtSource plain_fusion() {
  return {R"(// D = alpha * acc (+ bias along N). No C operand is read (ElementC = void).
constexpr unsigned kEpiInputMask = 0u, kEpiTensorMask = 0u;
using BiasOp = cute::conditional_t<kSwapAB,
    cutlass::epilogue::fusion::LinCombPerRowBias<ElementD, ElementCompute, ElementEpi, ElementD, ElementCompute>,
    cutlass::epilogue::fusion::LinCombPerColBias<ElementD, ElementCompute, ElementEpi, ElementD, ElementCompute>>;
// The no-smem epilogue's builder matches LinearCombination with the void C it is given.
using PlainOp = cute::conditional_t<kTmaEpilogue,
    cutlass::epilogue::fusion::LinearCombination<ElementD, ElementCompute, ElementD, ElementCompute>,
    cutlass::epilogue::fusion::LinearCombination<ElementD, ElementCompute, void, ElementCompute>>;
using FusionOp = cute::conditional_t<kHasBias, BiasOp, PlainOp>;
)",
          R"(  args.epilogue.thread.alpha = p.alpha;
  args.epilogue.thread.beta = 0.0f;
  set_bias(args, p.bias);
)"};
}

}  // namespace fact::realize
