// NVRTC through dlopen: the entry points are declared here from nvrtc.h
// (CUDA 13) so that building Kiln needs no CUDA toolkit.
#include <chrono>
#include <cstdlib>

#include "compiler/codegen/cuda/cuda_api.h"

namespace kiln::codegen::cuda {
namespace {

using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;
constexpr nvrtcResult kNvrtcSuccess = 0;
constexpr nvrtcResult kNvrtcErrorCompilation = 6;

struct Nvrtc {
  Status status;  // why the library is unusable, when it is
  std::string path;
  int major = 0, minor = 0;

  const char* (*GetErrorString)(nvrtcResult) = nullptr;
  nvrtcResult (*Version)(int*, int*) = nullptr;
  nvrtcResult (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                               const char* const*) = nullptr;
  nvrtcResult (*DestroyProgram)(nvrtcProgram*) = nullptr;
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*GetPTXSize)(nvrtcProgram, std::size_t*) = nullptr;
  nvrtcResult (*GetPTX)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, std::size_t*) = nullptr;
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, std::size_t*) = nullptr;
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char*) = nullptr;
};

// Loaded once per process; a function-local static makes the first use
// thread-safe without a lock on every later call.
const Nvrtc& nvrtc() {
  static const Nvrtc loaded = [] {
    Nvrtc n;
    std::vector<std::string> dirs;
    if (const char* home = std::getenv("CUDA_HOME"); home && *home) dirs.push_back(std::string(home) + "/lib64");
    dirs.push_back("/usr/local/cuda/lib64");
    for (const std::string& d : python_cuda_lib_dirs({"nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib"})) dirs.push_back(d);
    auto lib = load_cuda_library("NVRTC", "KILN_NVRTC_LIBRARY",
                                 {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}, dirs);
    if (!lib) {
      n.status = lib.status();
      return n;
    }
    n.path = lib->path;
    void* h = lib->handle;
    std::string missing;
    bind_symbol(h, "nvrtcGetErrorString", n.GetErrorString, missing);
    bind_symbol(h, "nvrtcVersion", n.Version, missing);
    bind_symbol(h, "nvrtcCreateProgram", n.CreateProgram, missing);
    bind_symbol(h, "nvrtcDestroyProgram", n.DestroyProgram, missing);
    bind_symbol(h, "nvrtcCompileProgram", n.CompileProgram, missing);
    bind_symbol(h, "nvrtcGetPTXSize", n.GetPTXSize, missing);
    bind_symbol(h, "nvrtcGetPTX", n.GetPTX, missing);
    bind_symbol(h, "nvrtcGetCUBINSize", n.GetCUBINSize, missing);
    bind_symbol(h, "nvrtcGetCUBIN", n.GetCUBIN, missing);
    bind_symbol(h, "nvrtcGetProgramLogSize", n.GetProgramLogSize, missing);
    bind_symbol(h, "nvrtcGetProgramLog", n.GetProgramLog, missing);
    if (!missing.empty()) {
      n.status = Status::error("NVRTC at " + n.path + " lacks " + missing + " (NVRTC 11.1 or newer is needed)");
      return n;
    }
    if (n.Version(&n.major, &n.minor) != kNvrtcSuccess)
      n.status = Status::error("NVRTC at " + n.path + ": nvrtcVersion failed");
    return n;
  }();
  return loaded;
}

std::string error_text(const Nvrtc& n, nvrtcResult rc) {
  const char* s = n.GetErrorString ? n.GetErrorString(rc) : nullptr;
  return s ? s : "NVRTC error " + std::to_string(rc);
}

// Destroys the program on every exit path, including the early error returns.
struct ProgramGuard {
  const Nvrtc& n;
  nvrtcProgram prog = nullptr;
  ~ProgramGuard() {
    if (prog) n.DestroyProgram(&prog);
  }
};

std::string program_log(const Nvrtc& n, nvrtcProgram prog) {
  std::size_t size = 0;
  if (n.GetProgramLogSize(prog, &size) != kNvrtcSuccess || size <= 1) return "";
  std::string log(size, '\0');
  if (n.GetProgramLog(prog, log.data()) != kNvrtcSuccess) return "";
  log.resize(size - 1);  // the size counts the terminating NUL
  return log;
}

}  // namespace

Expected<NvrtcOutput> nvrtc_compile(const std::string& source, const std::string& name, int sm,
                                    bool want_cubin, const std::vector<std::string>& extra_options) {
  const Nvrtc& n = nvrtc();
  if (!n.status.ok()) return n.status;
  auto start = std::chrono::steady_clock::now();

  ProgramGuard guard{n};
  if (nvrtcResult rc = n.CreateProgram(&guard.prog, source.c_str(), name.c_str(), 0, nullptr, nullptr);
      rc != kNvrtcSuccess)
    return Status::error("nvrtcCreateProgram(" + name + "): " + error_text(n, rc));

  // A real architecture (sm_XX) makes NVRTC emit SASS in a cubin; a virtual one
  // (compute_XX) stops at PTX, which the driver JIT-compiles at load time.
  std::vector<std::string> options = {
      std::string(want_cubin ? "--gpu-architecture=sm_" : "--gpu-architecture=compute_") + std::to_string(sm),
      "-std=c++17"};
  options.insert(options.end(), extra_options.begin(), extra_options.end());
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());

  nvrtcResult rc = n.CompileProgram(guard.prog, int(argv.size()), argv.data());
  NvrtcOutput out;
  out.log = program_log(n, guard.prog);
  if (rc != kNvrtcSuccess) {
    std::string opts;
    for (const std::string& o : options) opts += " " + o;
    std::string why = rc == kNvrtcErrorCompilation ? "" : " (" + error_text(n, rc) + ")";
    return Status::error("NVRTC failed to compile " + name + why + " with options" + opts + ":\n" + out.log);
  }

  // PTX is fetched even for a cubin build, where NVRTC may still keep it (it
  // helps when reading the generated code); its absence is not an error then.
  std::size_t size = 0;
  if (n.GetPTXSize(guard.prog, &size) == kNvrtcSuccess && size > 1) {
    out.ptx.assign(size, '\0');
    if (n.GetPTX(guard.prog, out.ptx.data()) != kNvrtcSuccess) out.ptx.clear();
    else out.ptx.resize(size - 1);
  }
  if (!want_cubin && out.ptx.empty()) return Status::error("NVRTC produced no PTX for " + name);
  if (want_cubin) {
    if (rc = n.GetCUBINSize(guard.prog, &size); rc != kNvrtcSuccess || size == 0)
      return Status::error("nvrtcGetCUBINSize(" + name + "): " + error_text(n, rc));
    out.cubin.assign(size, '\0');
    if (rc = n.GetCUBIN(guard.prog, out.cubin.data()); rc != kNvrtcSuccess)
      return Status::error("nvrtcGetCUBIN(" + name + "): " + error_text(n, rc));
  }
  out.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

std::string nvrtc_describe() {
  const Nvrtc& n = nvrtc();
  if (!n.status.ok()) return "unavailable: " + n.status.message();
  return "NVRTC " + std::to_string(n.major) + "." + std::to_string(n.minor) + " from " + n.path;
}

}  // namespace kiln::codegen::cuda
