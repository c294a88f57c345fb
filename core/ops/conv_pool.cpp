#include "core/ops/kernel_util.h"

namespace kiln {

void register_conv_pool_ops(OpRegistry& r) { (void)r; }

}  // namespace kiln
