#pragma once
// Internal to compiler/codegen/cpu: builds the LLVM module of a scheduled
// program (IRBuilder). Includes LLVM: never include it from a public header.
#include <memory>
#include <string>
#include <vector>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "compiler/codegen/cpu/cpu_codegen.h"
#include "compiler/codegen/cpu/loop_plan.h"

namespace kiln::codegen::cpu {

// One function, group_symbol(i), per group whose plan has_function().
// Throws kiln::Error for what it cannot generate.
std::unique_ptr<llvm::Module> emit_module(llvm::LLVMContext& ctx, const sched::ScheduledProgram& s,
                                          const std::vector<GroupLoops>& plans, InjectedBug bug);

// The symbol of group i's function.
std::string group_symbol(size_t group);

}  // namespace kiln::codegen::cpu
