// Content hashing for cache keys and kernel symbols (SHA-256 through OpenSSL's EVP API).
#pragma once
#include <filesystem>
#include <string>
#include <string_view>

namespace fact {

/// SHA-256 of `data` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

/// SHA-256 of a file's bytes as 64 hex digits. Throws fact::Error if it cannot be read.
std::string sha256_file(const std::filesystem::path& path);

}  // namespace fact
