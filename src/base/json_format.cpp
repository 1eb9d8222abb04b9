#include "base/json_format.h"

#include <set>
#include <vector>

#include "base/error.h"
#include "base/nesting.h"

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

template <typename Json>
Json parse_json_document(std::string_view text, std::string_view what) {
  check_nesting_depth(text, what);
  // One set of keys per open object (arrays push none); the last key seen names the
  // enclosing member in the message.
  std::vector<std::set<std::string>> keys;
  std::vector<std::string> member{""};
  auto check = [&](int, typename Json::parse_event_t event, Json& parsed) {
    using E = typename Json::parse_event_t;
    if (event == E::object_start) {
      keys.emplace_back();
      member.push_back(member.back());
    } else if (event == E::object_end) {
      keys.pop_back();
      member.pop_back();
    } else if (event == E::key) {
      const std::string k = parsed.template get<std::string>();
      if (!keys.empty() && !keys.back().insert(k).second) {
        const std::string& outer = member[member.size() - 2];
        throw Error(std::string(what) + ": duplicate key \"" + k + "\" in one object" +
                    (outer.empty() ? std::string() : " (inside \"" + outer + "\")"));
      }
      member.back() = k;
    }
    return true;
  };
  try {
    return Json::parse(text, check);
  } catch (const nlohmann::json::exception& e) {
    // parse_error, and out_of_range for a number too large for its type ("1E999999").
    throw Error(std::string(what) + ": " + e.what());
  }
}

template nlohmann::json parse_json_document<nlohmann::json>(std::string_view, std::string_view);
template nlohmann::ordered_json parse_json_document<nlohmann::ordered_json>(std::string_view, std::string_view);

}  // namespace fact
