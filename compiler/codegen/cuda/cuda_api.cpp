// Finding the CUDA shared libraries. Shared by NVRTC, the driver and (later)
// cuBLAS, so that every one honours the same environment variables.
#include "compiler/codegen/cuda/cuda_api.h"

#include <dlfcn.h>
#include <glob.h>
#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <sys/stat.h>

namespace kiln::codegen::cuda {
namespace {

std::vector<std::string> split_path_list(const char* list) {
  std::vector<std::string> out;
  if (!list) return out;
  std::string s = list;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t end = s.find(':', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// The file the loader actually mapped: a soname alone does not tell the user
// which of several installed toolkits is in use.
std::string mapped_path(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && map->l_name[0])
    return map->l_name;
  return fallback;
}

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

void* library_symbol(void* lib, const char* symbol, std::string& missing) {
  void* p = dlsym(lib, symbol);
  if (!p) missing += std::string(missing.empty() ? "" : ", ") + symbol;
  return p;
}

Expected<LoadedLibrary> load_cuda_library(const std::string& what, const char* override_env,
                                          const std::vector<std::string>& sonames,
                                          const std::vector<std::string>& extra_dirs) {
  std::string tried;
  auto attempt = [&](const std::string& name) -> void* {
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* err = dlerror();
      tried += "\n  dlopen " + name + ": " + (err ? err : "unknown error");
    }
    return handle;
  };

  // An explicit file is a promise the user made: falling back to some other
  // copy would hide a typo and test the wrong library.
  if (const char* forced = override_env ? std::getenv(override_env) : nullptr; forced && *forced) {
    if (void* h = attempt(forced)) return LoadedLibrary{h, mapped_path(h, forced)};
    return Status::error(what + " not found: " + override_env + "=" + forced + " could not be loaded:" +
                         tried);
  }

  // Folders are probed with stat first so the error lists only real attempts
  // rather than one "No such file" per folder and soname.
  std::vector<std::string> folders = split_path_list(std::getenv("KILN_CUDA_LIBRARY_PATH"));
  for (const std::string& dir : folders)
    for (const std::string& so : sonames)
      if (std::string path = dir + "/" + so; is_file(path))
        if (void* h = attempt(path)) return LoadedLibrary{h, mapped_path(h, path)};

  for (const std::string& so : sonames)
    if (void* h = attempt(so)) return LoadedLibrary{h, mapped_path(h, so)};

  for (const std::string& dir : extra_dirs)
    for (const std::string& so : sonames)
      if (std::string path = dir + "/" + so; is_file(path))
        if (void* h = attempt(path)) return LoadedLibrary{h, mapped_path(h, path)};

  std::string message = what + " not found:" + tried;
  if (!extra_dirs.empty()) {
    message += "\n  also searched:";
    for (const std::string& dir : extra_dirs) message += " " + dir;
  }
  if (!folders.empty()) message += "\n  and the KILN_CUDA_LIBRARY_PATH folders";
  if (override_env) message += std::string("\n  set ") + override_env + " to the library file";
  return Status::error(message);
}

std::vector<std::string> python_cuda_lib_dirs(const std::vector<std::string>& subdirs) {
  // pip's nvidia-* wheels put the toolkit libraries under site-packages, and a
  // PyTorch install often brings them without any system CUDA. No Python is run
  // to ask where site-packages is: the usual prefixes are globbed instead.
  std::vector<std::string> prefixes;
  for (const char* env : {"VIRTUAL_ENV", "CONDA_PREFIX"})
    if (const char* p = std::getenv(env); p && *p) prefixes.push_back(p);
  // A venv on PATH (activated or not) is found through its bin folder.
  for (const std::string& dir : split_path_list(std::getenv("PATH")))
    if (dir.size() > 4 && dir.compare(dir.size() - 4, 4, "/bin") == 0) prefixes.push_back(dir.substr(0, dir.size() - 4));
  if (const char* home = std::getenv("HOME"); home && *home) prefixes.push_back(std::string(home) + "/.local");
  for (const char* p : {"/usr/local", "/usr", "/opt/conda"}) prefixes.push_back(p);
  std::sort(prefixes.begin(), prefixes.end());
  prefixes.erase(std::unique(prefixes.begin(), prefixes.end()), prefixes.end());

  std::vector<std::string> roots;
  for (const std::string& dir : split_path_list(std::getenv("PYTHONPATH"))) roots.push_back(dir);
  for (const std::string& prefix : prefixes)
    for (const char* kind : {"site-packages", "dist-packages"}) {
      glob_t g{};
      std::string pattern = prefix + "/lib/python3*/" + kind;
      if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
        for (std::size_t i = 0; i < g.gl_pathc; ++i) roots.push_back(g.gl_pathv[i]);
      ::globfree(&g);
    }

  std::vector<std::string> out;
  for (const std::string& root : roots)
    for (const std::string& sub : subdirs) {
      struct stat st {};
      std::string dir = root + "/" + sub;
      if (::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) out.push_back(dir);
    }
  return out;
}

}  // namespace kiln::codegen::cuda
