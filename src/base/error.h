// fact::Error: the one exception type FACT throws for bad input or a broken invariant.
#pragma once

#include <stdexcept>
#include <string>

namespace fact {

/// Thrown for malformed input (graph JSON or text, plan, command-line values) and for
/// lookups of names that do not exist. The message names what was wrong and where
/// (a JSON path, a `line:column`, a value name), so callers print it as is.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace fact
