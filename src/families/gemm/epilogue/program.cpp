#include "families/gemm/epilogue/program.h"

#include <map>

#include "base/error.h"

namespace fact::realize {
namespace {

// How a tree op (op_table.h) compiles: its operands, and the instruction it pushes.
enum class Form { binary, x, x_c, bounds };
struct TreeOp {
  Form form;
  EpiOp instr;  // for bounds: clamp_lo, then clamp_hi
  double cost;
};

// Every op a tree may hold, by name: the table's BINARY rows, its UNARY rows but the
// instruction-only ones (EPI_INSTR) and its CLAMP rows.
const std::map<std::string, TreeOp>& tree_ops() {
#define FACT_EPI_TREE_BINARY(name, aten, eval, range, evt, evt_body, cost) {#name, {Form::binary, EpiOp::name, cost}},
#define FACT_EPI_TREE_UNARY(name, aten, form, eval, evt, cost, ...) FACT_EPI_TREE_##form(name, cost)
#define FACT_EPI_TREE_EPI_X(name, cost) {#name, {Form::x, EpiOp::name, cost}},
#define FACT_EPI_TREE_EPI_X_C(name, cost) {#name, {Form::x_c, EpiOp::name, cost}},
#define FACT_EPI_TREE_EPI_INSTR(name, cost)
#define FACT_EPI_TREE_CLAMP(name, aten, cost, rule) {#name, {Form::bounds, EpiOp::clamp_lo, cost}},
  static const std::map<std::string, TreeOp> ops{
      FACT_EPILOGUE_OPS(FACT_EPI_TREE_BINARY, FACT_EPI_TREE_UNARY, FACT_EPI_TREE_CLAMP, FACT_EPI_NONE)};
#undef FACT_EPI_TREE_BINARY
#undef FACT_EPI_TREE_UNARY
#undef FACT_EPI_TREE_EPI_X
#undef FACT_EPI_TREE_EPI_X_C
#undef FACT_EPI_TREE_EPI_INSTR
#undef FACT_EPI_TREE_CLAMP
  return ops;
}

const TreeOp* tree_op(const std::string& name) {
  auto it = tree_ops().find(name);
  return it == tree_ops().end() ? nullptr : &it->second;
}

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
    const TreeOp* row = tree_op(op);
    if (!row) throw Error("epilogue: unknown op '" + op + "'");
    emit(args.at(0));
    switch (row->form) {
      case Form::binary:
        emit(args.at(1));
        return push(row->instr, 0, -1);
      case Form::x: return push(row->instr, 0, 0);
      case Form::x_c: return push(row->instr, constant(1), 0);
      case Form::bounds:
        if (!args.at(1).is_null()) push(EpiOp::clamp_lo, constant(1), 0);
        if (!args.at(2).is_null()) push(EpiOp::clamp_hi, constant(2), 0);
        return;
    }
    throw Error("epilogue: unknown op '" + op + "'");
  }
};

}  // namespace

EpilogueProgram compile_epilogue(const nlohmann::json& tree) {
  Compiler c;
  c.emit(tree);
  return c.prog;
}

double epilogue_op_cost(const std::string& op) {
  const TreeOp* row = tree_op(op);
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
