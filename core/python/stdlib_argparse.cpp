#include "core/python/compiler.h"
#include "core/python/stdlib.h"
#include "core/python/vm.h"
namespace kiln::py {
namespace {
const char* const kArgparseSource = R"PY(
)PY";
}
KILN_STDLIB_SOURCE(load_argparse, kArgparseSource, "argparse.py")
}  // namespace kiln::py
