#include "core/ops/kernel_util.h"

namespace kiln {

void register_linalg_ops(OpRegistry& r) { (void)r; }

}  // namespace kiln
