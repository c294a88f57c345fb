#include "compiler/codegen/cpu/vector_math.h"

#include <mutex>
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

// VecDesc keeps StringRefs: the names live as long as the process.
std::vector<llvm::VecDesc> descriptions(const std::string& features) {
  static std::vector<std::string> names;
  static std::vector<llvm::VecDesc> all;
  static std::vector<std::string> feature_of;
  static bool made = [] {
    struct Entry {
      std::string scalar, vector, prefix;
      unsigned lanes;
    };
    std::vector<Entry> entries;
    for (const Routine& r : kRoutines)
      for (const Isa& isa : kIsas)
        for (bool is_float : {true, false}) {
          unsigned lanes = unsigned(is_float ? isa.float_lanes : isa.float_lanes / 2);
          std::string scalar = std::string(r.name) + (is_float ? "f" : "");
          std::string n = std::to_string(lanes);
          entries.push_back({scalar, std::string("_ZGV") + isa.letter + "N" + n + "v_" + scalar, "_ZGV_LLVM_N" + n + "v",
                             lanes});
          feature_of.push_back(isa.feature);
        }
    names.reserve(entries.size() * 3);
    for (const Entry& e : entries) {
      names.push_back(e.scalar);
      llvm::StringRef scalar = names.back();
      names.push_back(e.vector);
      llvm::StringRef vector = names.back();
      names.push_back(e.prefix);
      llvm::StringRef prefix = names.back();
      all.emplace_back(scalar, vector, llvm::ElementCount::getFixed(e.lanes), false, prefix);
    }
    return true;
  }();
  (void)made;
  std::vector<llvm::VecDesc> out;
  for (size_t i = 0; i < all.size(); ++i)
    if (has_feature(features, feature_of[i].c_str())) out.push_back(all[i]);
  return out;
}

}  // namespace

void add_vector_math(llvm::TargetLibraryInfoImpl& tli, const llvm::Triple& triple, const std::string& features) {
  if (!triple.isX86() || !triple.isOSLinux()) return;
  tli.addVectorizableFunctions(descriptions(features));
}

}  // namespace kiln::codegen::cpu
