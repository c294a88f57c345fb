#pragma once
// Where tensors are (TensorObj::device: "cpu", "cuda:0", "meta").
//
// Kiln's eager kernels run on the host for every device: a tensor on "cuda:N"
// holds host memory tagged with its device. The tag is what matters to the
// rest of Kiln: torch.compile regions whose inputs are on a CUDA device run on
// the GPU (compiler/pipeline/region_backends.cpp keeps their data resident
// there), guards check it, and a program written for CUDA runs, prints and
// mixes devices as it would under PyTorch (including the error for mixing).
#include <string>

#include "core/python/object.h"

namespace kiln::py {

// The device of the tensors a call makes: `given` (its device= argument, or
// where .cuda() / .cpu() / .to(other) go) when not empty, else the device the
// tensor arguments share. Arguments on two devices are PyTorch's RuntimeError,
// except a 0-dim CPU tensor (a wrapped number) and ops that move data across.
std::string call_device(const std::string& op, const CallArgs& a, const std::string& given);

// Tags every tensor in `out` that is not one of the arguments with `device`.
void place_results(const Value& out, const CallArgs& a, const std::string& device);

}  // namespace kiln::py
