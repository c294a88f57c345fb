#include "core/ops/kernel_util.h"

namespace kiln {

void register_shape_ops(OpRegistry& r) { (void)r; }

}  // namespace kiln
