#include "engine/kernel_library.h"

#include <dlfcn.h>

#include "base/error.h"

namespace fact::realize {

KernelLibrary::KernelLibrary(const std::string& path) : handle_(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
  if (!handle_) throw Error("cannot load kernel library " + path + ": " + dlerror());
}

KernelLibrary::~KernelLibrary() { dlclose(handle_); }

void* KernelLibrary::address(const std::string& name) const {
  void* f = dlsym(handle_, name.c_str());
  if (!f) throw Error("kernel library lacks symbol " + name);
  return f;
}

}  // namespace fact::realize
