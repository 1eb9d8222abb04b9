#include "families/gemm/epilogue/program.h"

#include <cmath>
#include <map>

#include "base/error.h"

namespace fact::realize {
namespace {

struct Compiler {
  EpilogueProgram prog;
  int depth = 0, max_depth = 0;

  void push(EpiOp op, double value, int stack_delta) {
    if (prog.size == EpilogueProgram::kMaxInstr) {
      throw Error("epilogue: the expression has more than " + std::to_string(EpilogueProgram::kMaxInstr) + " steps");
    }
    prog.code[prog.size++] = {op, value};
    depth += stack_delta;
    max_depth = std::max(max_depth, depth);
    if (max_depth > EpilogueProgram::kMaxStack) throw Error("epilogue: the expression nests too deeply");
  }

  void emit(const nlohmann::json& t) {
    if (t.contains("acc")) return push(EpiOp::acc, 0, +1);
    if (t.contains("scalar")) return push(EpiOp::scalar, t.at("scalar").get<double>(), +1);
    if (t.contains("input")) {
      const std::string slot = t.at("input");
      const int i = epilogue_input_slot(slot);
      if (i < 0) throw Error("epilogue: bad input slot '" + slot + "'");
      return push(EpiOp::input, double(i), +1);
    }
    const std::string op = t.at("op");
    const auto& args = t.at("args");
    auto constant = [&](size_t i) { return args.at(i).at("scalar").get<double>(); };
    const EpilogueTreeOp* row = epilogue_tree_op(op);
    if (!row) throw Error("epilogue: unknown op '" + op + "'");
    emit(args.at(0));
    switch (row->form) {
      case EpilogueTreeOp::Form::binary:
        emit(args.at(1));
        return push(row->instr, 0, -1);
      case EpilogueTreeOp::Form::x: return push(row->instr, 0, 0);
      case EpilogueTreeOp::Form::x_c: return push(row->instr, constant(1), 0);
      case EpilogueTreeOp::Form::bounds:
        if (!args.at(1).is_null()) push(EpiOp::clamp_lo, constant(1), 0);
        if (!args.at(2).is_null()) push(EpiOp::clamp_hi, constant(2), 0);
        return;
    }
    throw Error("epilogue: unknown op '" + op + "'");
  }
};

}  // namespace

const EpilogueTreeOp* epilogue_tree_op(const std::string& name) {
  using F = EpilogueTreeOp::Form;
  using R = EpilogueTreeOp::Range;
#define EPI_KEEP R::keep
#define EPI_DROP R::drop
#define EPI_BOUNDED(variant, scale, note) R::bounded, variant, scale, note
#define FACT_EPI_TREE_BINARY(name, aten, eval, range, evt, evt_body, cost) {#name, {F::binary, EpiOp::name, cost, R::keep}},
#define FACT_EPI_TREE_UNARY(name, aten, form, eval, evt, cost, critical, branch, point, label, range, rule) \
  FACT_EPI_TREE_##form(name, cost, rule)
#define FACT_EPI_TREE_EPI_X(name, cost, ...) {#name, {F::x, EpiOp::name, cost, __VA_ARGS__}},
#define FACT_EPI_TREE_EPI_X_C(name, cost, ...) {#name, {F::x_c, EpiOp::name, cost, __VA_ARGS__}},
#define FACT_EPI_TREE_EPI_INSTR(name, cost, ...)
#define FACT_EPI_TREE_CLAMP(name, aten, cost, ...) {#name, {F::bounds, EpiOp::clamp_lo, cost, __VA_ARGS__}},
  static const std::map<std::string, EpilogueTreeOp> ops{
      FACT_EPILOGUE_OPS(FACT_EPI_TREE_BINARY, FACT_EPI_TREE_UNARY, FACT_EPI_TREE_CLAMP, FACT_EPI_NONE)};
#undef EPI_KEEP
#undef EPI_DROP
#undef EPI_BOUNDED
#undef FACT_EPI_TREE_BINARY
#undef FACT_EPI_TREE_UNARY
#undef FACT_EPI_TREE_EPI_X
#undef FACT_EPI_TREE_EPI_X_C
#undef FACT_EPI_TREE_EPI_INSTR
#undef FACT_EPI_TREE_CLAMP
  auto it = ops.find(name);
  return it == ops.end() ? nullptr : &it->second;
}

EpilogueProgram compile_epilogue(const nlohmann::json& tree) {
  Compiler c;
  c.emit(tree);
  return c.prog;
}

double epilogue_op_cost(const std::string& op) {
  const EpilogueTreeOp* row = epilogue_tree_op(op);
  return row ? row->cost : 1.0;
}

const char* epilogue_branch_label(EpiOp op) {
#define FACT_EPI_LABEL(name, aten, form, eval, evt, cost, critical, branch, point, label, ...) \
  if (op == EpiOp::name && (label) != nullptr) return label;
  FACT_EPILOGUE_OPS(FACT_EPI_NONE, FACT_EPI_LABEL, FACT_EPI_NONE, FACT_EPI_NONE)
#undef FACT_EPI_LABEL
  return "op";
}

}  // namespace fact::realize
