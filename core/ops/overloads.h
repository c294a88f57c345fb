#pragma once
// An op's registered overloads by name, for graphs that name an op without
// its overload (torch.ops.aten.round(x), an "overload packet") or with one
// the arguments do not fit.
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

// "aten::round": a namespace and a name, no overload.
bool is_overload_packet(std::string_view target);

// The registered overloads of `op` ("aten::round"): full names
// ("aten::round.default", "aten::round.decimals"), `default` first, then in
// name order.
std::vector<std::string> registered_overloads(std::string_view op);

}  // namespace kiln
