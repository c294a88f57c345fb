#include "compiler/codegen/cpu/vector_math.h"

#include <string>
#include <vector>

namespace kiln::codegen::cpu {

namespace {

// LLVM 19's own libmvec table lacks tanh and the AVX-512 variants, so Kiln
// lists the routines its code calls itself (glibc >= 2.35 has them all).
// Vector ABI names: _ZGV<isa><mask><lanes>v_<name>, isa b = SSE, d = AVX2,
// e = AVX-512.
struct Routine {
  const char* name;  // the double version; the float one adds "f"
};
constexpr Routine kRoutines[] = {{"sin"}, {"cos"}, {"exp"}, {"log"}, {"tanh"}, {"tan"}, {"erf"}, {"expm1"}, {"log1p"}};

struct Isa {
  char letter;
  int float_lanes;  // double lanes are half
  const char* feature;  // the variants run only where the CPU has it
};
constexpr Isa kIsas[] = {{'b', 4, "+sse2"}, {'d', 8, "+avx2"}, {'e', 16, "+avx512f"}};

bool has_feature(const std::string& features, const char* f) {
  return (","+features+",").find(std::string(",") + f + ",") != std::string::npos;
}

// One vector variant. VecDesc keeps StringRefs, so the names live in this
// process-wide table, built once and never changed.
struct Variant {
  std::string scalar, vector, prefix;
  unsigned lanes;
  const char* feature;
};

const std::vector<Variant>& variants() {
  static const std::vector<Variant> table = [] {
    std::vector<Variant> out;
    for (const Routine& r : kRoutines)
      for (const Isa& isa : kIsas)
        for (bool is_float : {true, false}) {
          unsigned lanes = unsigned(is_float ? isa.float_lanes : isa.float_lanes / 2);
          std::string scalar = std::string(r.name) + (is_float ? "f" : "");
          std::string n = std::to_string(lanes);
          out.push_back({scalar, std::string("_ZGV") + isa.letter + "N" + n + "v_" + scalar, "_ZGV_LLVM_N" + n + "v",
                         lanes, isa.feature});
        }
    return out;
  }();
  return table;
}

}  // namespace

void add_vector_math(llvm::TargetLibraryInfoImpl& tli, const llvm::Triple& triple, const std::string& features) {
  if (!triple.isX86() || !triple.isOSLinux()) return;
  std::vector<llvm::VecDesc> runnable;
  for (const Variant& v : variants())
    if (has_feature(features, v.feature))
      runnable.emplace_back(v.scalar, v.vector, llvm::ElementCount::getFixed(v.lanes), false, v.prefix);
  tli.addVectorizableFunctions(runnable);
}

}  // namespace kiln::codegen::cpu
