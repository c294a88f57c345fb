#pragma once
// Internal to compiler/codegen/cpu: tells LLVM's vectorizer which vector
// variants of the math functions exist (glibc's libmvec), so a loop calling
// expf / tanhf vectorizes into calls of _ZGVdN8v_expf / _ZGVeN16v_tanhf.
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/TargetParser/Triple.h>

#include <string>

namespace kiln::codegen::cpu {

// `features`: the target's feature string ("+avx2,+avx512f,..."); only variants the CPU runs are listed.
void add_vector_math(llvm::TargetLibraryInfoImpl& tli, const llvm::Triple& triple, const std::string& features);

}  // namespace kiln::codegen::cpu
