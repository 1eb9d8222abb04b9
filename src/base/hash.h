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

/// SHA-256 (hex) of a directory tree's content: of one line "<relative path> <SHA-256 of the
/// file>" per regular file under `root`, directory symlinks followed, in sorted path order. A
/// file's content, name or presence changes it; mtimes and the root's own path do not. Costs
/// one read of every file (the 28 MB CUTLASS 4.2 include tree: about 0.2 s). Throws
/// fact::Error when `root` is not a directory or a file cannot be read.
std::string sha256_tree(const std::filesystem::path& root);

}  // namespace fact
