// The epilogue idioms FACT ships. Adding one: write src/families/gemm/epilogue/idioms/<name>.cpp, declare
// its factory in idioms/idioms.h and add one line here.
#include "families/gemm/epilogue/idiom.h"
#include "families/gemm/epilogue/idioms/idioms.h"

namespace fact::discover {

const std::vector<Idiom>& epilogue_idioms() {
  static const std::vector<Idiom> list{
      idioms::gelu_tanh_written_out(),  // tried first: it contains no smaller idiom's root
      idioms::gelu_erf_written_out(),
      idioms::silu_written_out(),
  };
  return list;
}

}  // namespace fact::discover
