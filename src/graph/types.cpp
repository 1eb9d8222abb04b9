#include "graph/types.h"

#include <array>
#include <string>

#include "base/error.h"

namespace fact::graph {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view torch, short_name;
  int64_t size;
};

// One table for every dtype property; order matches the enum.
constexpr std::array<DTypeInfo, 10> kDTypes{{
    {DType::f64, "float64", "f64", 8},
    {DType::f32, "float32", "f32", 4},
    {DType::f16, "float16", "f16", 2},
    {DType::bf16, "bfloat16", "bf16", 2},
    {DType::i64, "int64", "i64", 8},
    {DType::i32, "int32", "i32", 4},
    {DType::i16, "int16", "i16", 2},
    {DType::i8, "int8", "i8", 1},
    {DType::u8, "uint8", "u8", 1},
    {DType::b8, "bool", "b8", 1},
}};

const DTypeInfo& info(DType d) { return kDTypes[static_cast<size_t>(d)]; }

}  // namespace

std::string_view torch_name(DType d) { return info(d).torch; }
std::string_view short_name(DType d) { return info(d).short_name; }
int64_t element_size(DType d) { return info(d).size; }

bool is_floating(DType d) {
  return d == DType::f64 || d == DType::f32 || d == DType::f16 || d == DType::bf16;
}

DType dtype_from_torch_name(std::string_view name) {
  for (const auto& i : kDTypes)
    if (i.torch == name) return i.dtype;
  throw Error("unknown dtype '" + std::string(name) + "'");
}

std::optional<DType> dtype_from_short_name(std::string_view name) {
  for (const auto& i : kDTypes)
    if (i.short_name == name) return i.dtype;
  return std::nullopt;
}

int64_t TensorType::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t TensorType::distinct_elements() const {
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i)
    if (strides[i] != 0 || shape[i] == 0) n *= shape[i];
  return n;
}

bool TensorType::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

std::vector<int64_t> contiguous_strides(std::span<const int64_t> shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

}  // namespace fact::graph
