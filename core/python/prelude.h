#pragma once
// The parts of torch written in the Python subset (torch.nn, torch.optim) run
// once per VM at start-up from code compiled once per process.
#include <string>

#include "core/python/code.h"
#include "core/python/object.h"
#include "core/util/status.h"

namespace kiln::py {

class VM;

// Runs `code` (a prelude named `what` in messages: "torch.nn") in a fresh
// namespace whose __name__ is `module_name`, and returns that namespace. A
// prelude that does not compile or raises is Kiln's bug: it is reported on the
// VM's error stream and the result is null, so programs that do not use it
// still run.
Ref<Dict> run_prelude(VM& vm, const Expected<CodePtr>& code, const std::string& module_name, const std::string& what);

}  // namespace kiln::py
