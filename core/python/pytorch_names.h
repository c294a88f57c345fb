#pragma once
// PyTorch 2.11's public names in torch, Tensor, torch.nn, torch.nn.functional,
// torch.linalg, torch.special and torch.fft (dir() of each, recorded on the
// device): tells a gap of Kiln from a program's typo.
#include <optional>
#include <string_view>

namespace kiln::py {

// Whether PyTorch's namespace `ns` ("torch", "Tensor", "torch.nn", ...) has
// `name`; nullopt for a namespace the table does not record.
std::optional<bool> pytorch_has(std::string_view ns, std::string_view name);

}  // namespace kiln::py
