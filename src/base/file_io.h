// Whole-file read and write helpers that throw fact::Error naming the path.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace fact {

/// Reads a whole file as bytes. Throws Error("cannot read <path>: <reason>").
std::string read_file(const std::filesystem::path& path);

/// Writes (replaces) a whole file. Throws Error("cannot write <path>: <reason>").
void write_file(const std::filesystem::path& path, std::string_view contents);

}  // namespace fact
