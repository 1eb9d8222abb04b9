#include "base/hash.h"

#include <openssl/evp.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "base/error.h"
#include "base/file_io.h"

namespace fact {

std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), data.data(), data.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), digest, &len) != 1) {
    throw Error("SHA-256 failed in OpenSSL");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * len);
  for (unsigned i = 0; i < len; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 15]);
  }
  return out;
}

std::string sha256_file(const std::filesystem::path& path) { return sha256_hex(read_file(path)); }

std::string sha256_tree(const std::filesystem::path& root) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw Error("cannot hash " + root.string() + ": not a directory");
  std::vector<std::string> files;
  const auto opts = fs::directory_options::follow_directory_symlink;
  for (fs::recursive_directory_iterator it(root, opts, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file()) files.push_back(fs::relative(it->path(), root).generic_string());
  }
  if (ec) throw Error("cannot list " + root.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  std::string manifest;
  for (const auto& f : files) manifest += f + " " + sha256_file(root / f) + "\n";
  return sha256_hex(manifest);
}

}  // namespace fact
