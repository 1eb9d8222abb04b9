#include "base/json_format.h"

namespace fact {
namespace {

void write(const nlohmann::ordered_json& j, size_t indent, size_t width, std::string& out) {
  std::string flat = j.dump();
  if (!j.is_structured() || j.empty() || indent + flat.size() <= width) {
    out += flat;
    return;
  }
  const std::string pad(indent + 2, ' ');
  const bool object = j.is_object();
  out += object ? "{\n" : "[\n";
  bool first = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!std::exchange(first, false)) out += ",\n";
    out += pad;
    if (object) out += nlohmann::ordered_json(it.key()).dump() + ": ";
    write(*it, indent + 2, width, out);
  }
  out += '\n';
  out.append(indent, ' ');
  out += object ? '}' : ']';
}

}  // namespace

std::string pretty_json(const nlohmann::ordered_json& j, size_t width) {
  std::string out;
  write(j, 0, width, out);
  return out + "\n";
}

}  // namespace fact
