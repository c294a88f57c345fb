#include "core/ops/kernel_util.h"

namespace kiln {

void register_pointwise_binary_ops(OpRegistry& r) { (void)r; }

}  // namespace kiln
