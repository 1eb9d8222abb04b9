// A guard against input nested deeply enough to exhaust the stack of a recursive reader
// (graph JSON and graph text both nest argument lists).
#pragma once

#include <string_view>

namespace fact {

/// The deepest level of '[' / '{' nesting in `text`, not counting brackets inside
/// double-quoted strings (with backslash escapes).
int max_nesting_depth(std::string_view text);

/// Throws fact::Error("<what>: nesting deeper than <limit> levels ...") when `text` nests
/// deeper than `limit`. Real graphs nest a few levels (lists of lists of ints).
void check_nesting_depth(std::string_view text, std::string_view what, int limit = 256);

}  // namespace fact
