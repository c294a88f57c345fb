#include "core/ops/kernel_util.h"

namespace kiln {

void register_indexing_ops(OpRegistry& r) { (void)r; }

}  // namespace kiln
