// A generated kernel library (one .so from the kernel cache) opened for calling its C ABI
// entry points: dlopen(RTLD_NOW | RTLD_LOCAL) on construction, dlclose on destruction.
#pragma once
#include <string>

namespace fact::realize {

class KernelLibrary {
 public:
  /// Throws fact::Error "cannot load kernel library <path>: <dlerror>".
  explicit KernelLibrary(const std::string& path);
  ~KernelLibrary();
  KernelLibrary(const KernelLibrary&) = delete;
  KernelLibrary& operator=(const KernelLibrary&) = delete;

  /// The entry point `<symbol><suffix>` (e.g. fact_k_..._run) as a function pointer of
  /// type Fn. Throws fact::Error "kernel library lacks symbol <symbol><suffix>".
  template <class Fn>
  Fn function(const std::string& symbol, const char* suffix) const {
    return reinterpret_cast<Fn>(address(symbol + suffix));
  }

 private:
  void* address(const std::string& name) const;
  void* handle_;
};

}  // namespace fact::realize
