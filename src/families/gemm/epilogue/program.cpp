#include "families/gemm/epilogue/program.h"

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
    static const std::map<std::string, EpiOp> binary{{"add", EpiOp::add}, {"sub", EpiOp::sub},
                                                     {"mul", EpiOp::mul}, {"div", EpiOp::div}};
    static const std::map<std::string, EpiOp> unary{
        {"relu", EpiOp::relu}, {"gelu", EpiOp::gelu}, {"gelu_tanh", EpiOp::gelu_tanh},
        {"silu", EpiOp::silu}, {"sigmoid", EpiOp::sigmoid}, {"tanh", EpiOp::tanh},
        {"neg", EpiOp::neg},   {"erf", EpiOp::erf},     {"mish", EpiOp::mish},
        {"exp", EpiOp::exp}};
    const std::string op = t.at("op");
    const auto& args = t.at("args");
    auto constant = [&](size_t i) { return args.at(i).at("scalar").get<double>(); };
    if (auto it = binary.find(op); it != binary.end()) {
      emit(args.at(0));
      emit(args.at(1));
      return push(it->second, 0, -1);
    }
    if (auto it = unary.find(op); it != unary.end()) {
      emit(args.at(0));
      return push(it->second, 0, 0);
    }
    emit(args.at(0));
    if (op == "leaky_relu") return push(EpiOp::leaky_relu, constant(1), 0);
    if (op == "pow") return push(EpiOp::pow, constant(1), 0);
    if (op == "hardtanh" || op == "clamp") {
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

}  // namespace fact::realize
