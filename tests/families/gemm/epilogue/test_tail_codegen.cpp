// The tail kernel's source (tail_codegen.h): a vendor GEMM's elementwise tail as one plain
// CUDA kernel over D, rendered from the tail's epilogue program. Compiled for sm_90a by
// CompileTail below (skipped with FACT_SKIP_NVCC_TESTS=1).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <regex>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file_io.h"
#include "base/process.h"
#include "engine/build.h"
#include "families/gemm/epilogue/program.h"
#include "families/gemm/epilogue/tail_codegen.h"
#include "families/gemm/space.h"

using namespace fact::realize;
using nlohmann::json;

namespace {

// NewGELU after a bias add along N, times a vector along M, plus a tensor of D's shape.
const json kTree = json::parse(R"({"op": "add", "args": [{"op": "mul", "args": [
    {"op": "gelu_tanh", "args": [{"op": "add", "args": [{"acc": true}, {"input": "c0"}]}]}, {"input": "c1"}]},
    {"input": "c2"}]})");
const json kBroadcast = {{"c0", "n"}, {"c1", "m"}, {"c2", "mn"}};

}  // namespace

TEST(TailCodegen, NameSpellsDtypeAndTheTailsDigest) {
  EXPECT_EQ(tail_kernel_name(kTree, kBroadcast, DType::f32), "fact_tail_f32_" + epilogue_token(kTree, kBroadcast));
  EXPECT_EQ(tail_kernel_name(kTree, kBroadcast, DType::bf16).rfind("fact_tail_bf16_evt", 0), 0u);
  EXPECT_NE(tail_kernel_name(kTree, kBroadcast, DType::f16), tail_kernel_name(kTree, kBroadcast, DType::f32));
  json other = kBroadcast;
  other["c0"] = "m";
  EXPECT_NE(tail_kernel_name(kTree, other, DType::f32), tail_kernel_name(kTree, kBroadcast, DType::f32));
}

TEST(TailCodegen, SourceHoldsTheProgramAsAConstantAndTheOneEvaluator) {
  const std::string src = render_tail_kernel(kTree, kBroadcast, DType::bf16);
  const std::string sym = kernel_symbol(tail_kernel_name(kTree, kBroadcast, DType::bf16));
  for (const std::string entry : {"_run(", "_can_implement(", "_workspace_bytes(", "_name("}) {
    EXPECT_NE(src.find(sym + entry), std::string::npos) << entry;
  }
  EXPECT_FALSE(std::regex_search(src, std::regex(R"(\{\{[A-Z_]+\}\})")));  // every placeholder filled
  EXPECT_NE(src.find("using Element = __nv_bfloat16;"), std::string::npos);
  EXPECT_NE(src.find("constexpr int kinds[4] = {1, 2, 3, 0};"), std::string::npos);
  // The program, instruction by instruction, as compile_epilogue makes it.
  const EpilogueProgram prog = compile_epilogue(kTree);
  EXPECT_NE(src.find("}, " + std::to_string(prog.size) + "};"), std::string::npos);
  const std::regex instr(R"(\{static_cast<fact::realize::EpiOp>\((\d+)\), ([^}]+)\})");
  int i = 0;
  for (auto it = std::sregex_iterator(src.begin(), src.end(), instr); it != std::sregex_iterator(); ++it, ++i) {
    ASSERT_LT(i, prog.size);
    EXPECT_EQ(std::stoi((*it)[1]), int(prog.code[i].op)) << "instruction " << i;
    EXPECT_EQ(std::strtod((*it)[2].str().c_str(), nullptr), prog.code[i].value) << "instruction " << i;
  }
  EXPECT_EQ(i, prog.size);
  // program.h's evaluator is pasted (with host_device.h in place of its include), not
  // reimplemented: the kernel calls eval_epilogue<float>.
  EXPECT_NE(src.find("FACT_HD inline T eval_epilogue("), std::string::npos);
  EXPECT_EQ(src.find("#include \"engine/host_device.h\""), std::string::npos);
  EXPECT_NE(src.find("#define FACT_HD __host__ __device__"), std::string::npos);
  EXPECT_NE(src.find("fact::realize::eval_epilogue<float>(kProgram"), std::string::npos);
}

TEST(TailCodegen, ScalarsReadBackExactlyAndNonFiniteOnesAreSpelled) {
  const json tree = json::parse(R"({"op": "clamp", "args": [{"op": "mul", "args": [{"acc": true}, {"scalar": 0.1}]},
      {"scalar": -1e300}, {"scalar": 1e308}]})");
  const std::string src = render_tail_kernel(tree, json::object(), DType::f32);
  EXPECT_NE(src.find("0x1.999999999999ap-4"), std::string::npos) << "0.1 in hexadecimal";
  EXPECT_NE(src.find("constexpr int kinds[4] = {0, 0, 0, 0};"), std::string::npos);
  const json inf = {{"op", "mul"}, {"args", {{{"acc", true}}, {{"scalar", HUGE_VAL}}}}};
  EXPECT_NE(render_tail_kernel(inf, json::object(), DType::f32).find("__builtin_huge_val()"), std::string::npos);
}

TEST(TailCodegen, BadTailsAreErrorsNamingWhatIsWrong) {
  auto error_of = [](const json& tree, const json& broadcast, DType d) -> std::string {
    try {
      render_tail_kernel(tree, broadcast, d);
    } catch (const fact::Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of(kTree, {{"c0", "n"}, {"c1", "m"}, {"c2", "scalar"}}, DType::f32).find("c2 has broadcast 'scalar'"),
            std::string::npos);
  EXPECT_NE(error_of(kTree, {{"c0", "n"}, {"c1", "m"}}, DType::f32).find("reads c2, which has no broadcast kind"),
            std::string::npos);
  EXPECT_NE(error_of(kTree, {{"c7", "n"}}, DType::f32).find("'c7' is not c0..c3"), std::string::npos);
  EXPECT_NE(error_of(json::parse(R"({"op": "frobnicate", "args": [{"acc": true}]})"), json::object(), DType::f32)
                .find("unknown op 'frobnicate'"),
            std::string::npos);
}

TEST(CompileTail, TailKernelBuildsForSm90aAsStraightLineCode) {
  if (const char* skip = std::getenv("FACT_SKIP_NVCC_TESTS"); skip && *skip == '1') {
    GTEST_SKIP() << "FACT_SKIP_NVCC_TESTS=1";
  }
  const std::string name = tail_kernel_name(kTree, kBroadcast, DType::f32);
  const auto results = build_kernels({{name, render_tail_kernel(kTree, kBroadcast, DType::f32)}},
                                     find_toolchain("", ""), FACT_TEST_CACHE_DIR, 1);
  ASSERT_EQ(results.size(), 1u);
  const auto& r = results[0];
  ASSERT_TRUE(r.ok) << r.reason;
  const std::string syms = fact::capture_output({"nm", "-D", "--defined-only", r.library.string()});
  for (const char* suffix : {"_run", "_can_implement", "_workspace_bytes", "_name"}) {
    EXPECT_NE(syms.find(kernel_symbol(name) + suffix), std::string::npos) << suffix;
  }
  // The constant program is unrolled into straight-line code: an interpreting loop would
  // index the program and its value stack at run time, which puts them in local memory
  // (a __local_depot in the PTX) or dispatches through a jump table (brx.idx).
  const std::filesystem::path dir = std::filesystem::path(FACT_TEST_CACHE_DIR) / "tail_ptx";
  std::filesystem::create_directories(dir);
  fact::write_file(dir / "tail.cu", render_tail_kernel(kTree, kBroadcast, DType::f32));
  const Toolchain tc = find_toolchain("", "");
  std::vector<std::string> cmd{tc.nvcc};
  cmd.insert(cmd.end(), tc.compile_flags.begin(), tc.compile_flags.end());
  cmd.insert(cmd.end(), {"-ptx", (dir / "tail.cu").string(), "-o", (dir / "tail.ptx").string()});
  ASSERT_EQ(fact::run_process(cmd, dir / "ptx.log"), 0) << fact::read_file(dir / "ptx.log");
  const std::string ptx = fact::read_file(dir / "tail.ptx");
  ASSERT_NE(ptx.find(".entry"), std::string::npos);
  EXPECT_EQ(ptx.find("__local_depot"), std::string::npos);
  EXPECT_EQ(ptx.find("brx.idx"), std::string::npos);
  EXPECT_EQ(ptx.find("tanh.approx"), std::string::npos);  // CUDA's accurate tanhf, as PyTorch's fp32 tanh
}
