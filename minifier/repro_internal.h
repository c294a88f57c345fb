#pragma once
// Shared by the repro_*.cpp files; not part of the minifier's interface.
#include <string>
#include <string_view>

#include "core/graph/graph.h"
#include "core/tensor/generator.h"
#include "core/tensor/tensor.h"
#include "core/util/status.h"
#include "minifier/repro.h"

namespace kiln::minify {

// The names inside a Kiln repro folder or zip.
inline constexpr std::string_view kGraphFile = "graph.txt";
inline constexpr std::string_view kInputsFile = "inputs.safetensors";
inline constexpr std::string_view kPredicateFile = "predicate.json";
inline constexpr std::string_view kReadmeFile = "README.txt";
// safetensors metadata of inputs.safetensors: a JSON array, one origin per input.
inline constexpr std::string_view kOriginsKey = "input_origins";

// torch._dynamo.testing.rand_strided on the CPU, drawing from `gen`.
Tensor rand_strided(const Shape& sizes, const Shape& strides, DType dtype, CpuGenerator& gen);

// A copy of `src` laid out with `strides`, made with a plain loop: the
// minifier forks children per candidate, so its parent (which reads and
// writes repros) must never start the eager kernels' thread pool.
Tensor plain_copy(const Tensor& src, const Shape& strides);
inline Tensor plain_contiguous(const Tensor& t) { return t.is_contiguous() ? t : plain_copy(t, contiguous_strides(t.sizes())); }

// "random (seed 0)", the origin of an input drawn from the seed.
inline std::string random_origin(uint64_t seed) { return "random (seed " + std::to_string(seed) + ")"; }

// The whole file, or a kiln::Error naming it.
std::string read_text_file(const std::string& path);

// 1-based line of the first line of `text` containing `needle` (0 when none).
int line_containing(std::string_view text, std::string_view needle);

// The reading PyTorch's minifier files and their content store
// (repro_read_torch.cpp); throws kiln::Error.
Repro read_torch_minifier_file(const std::string& path);

}  // namespace kiln::minify
