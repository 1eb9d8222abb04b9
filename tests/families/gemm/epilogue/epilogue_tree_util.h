// Builders of discovery's epilogue expression trees for tests: {"acc": true},
// {"scalar": v}, {"op": name, "args": [...]}.
#pragma once
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace fact::test {
inline nlohmann::json leaf_acc() { return {{"acc", true}}; }
inline nlohmann::json num(double v) { return {{"scalar", v}}; }
inline nlohmann::json op(const char* name, std::vector<nlohmann::json> args) { return {{"op", name}, {"args", std::move(args)}}; }
}  // namespace fact::test
