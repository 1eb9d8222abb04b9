#include "base/nesting.h"

#include <string>

#include "base/error.h"

namespace fact {

int max_nesting_depth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') deepest = std::max(deepest, ++depth);
    else if ((c == ']' || c == '}') && depth > 0) --depth;
  }
  return deepest;
}

void check_nesting_depth(std::string_view text, std::string_view what, int limit) {
  if (int d = max_nesting_depth(text); d > limit) {
    throw Error(std::string(what) + ": nesting deeper than " + std::to_string(limit) +
                " levels (" + std::to_string(d) + "): not a graph FACT reads");
  }
}

}  // namespace fact
