// Kernel templates (src/families/<name>/templates/*.cu.in, embedded in factc): `{{KEY}}`
// placeholders filled by a family's code generator.
#pragma once
#include <map>
#include <string>

namespace fact::realize {

/// Replaces every `{{KEY}}` of `text` by values[KEY]. Throws fact::Error naming the first
/// placeholder (`{{` upper-case letters and `_` `}}`) left unfilled.
std::string fill_placeholders(std::string text, const std::map<std::string, std::string>& values);

}  // namespace fact::realize
