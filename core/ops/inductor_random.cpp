// Inductor's random prims (torch/_inductor/inductor_prims.py), as PyTorch runs
// them outside Inductor: each is defined by an eager implementation that draws
// from the default generator, which Kiln reproduces bit for bit
// (core/tensor/generator.h):
//   inductor_seed(device)            torch.randint(2**63 - 1, [])
//   inductor_seeds(count, device)    torch.randint(2**63 - 1, [count])
//   inductor_lookup_seed(seeds, i)   seeds[i].clone()
//   inductor_random(size, seed, mode) torch.rand / torch.randn(size, dtype=float32)
//   inductor_randint(lo, hi, size, seed) torch.randint(lo, hi, size)  (int64)
// The seed tensor only names the device; its value is not read. Inductor's
// generated kernels instead hash the seed with an offset (Philox), so a graph
// compiled by Inductor draws other numbers than these: comparing Kiln with a
// compiled PyTorch run needs PyTorch's fallback_random, as any comparison of
// random ops does. Draws for a CUDA device come from CUDA's Philox generator,
// which the CPU kernels do not reproduce: those calls are refused.
#include "core/ops/kernel_util.h"
#include "core/tensor/generator.h"

namespace kiln {
namespace {

// torch.randint(2**63 - 1, ...) draws from [0, 2^63 - 1).
constexpr int64_t kSeedBound = std::numeric_limits<int64_t>::max();

// The device of a seed factory: meta gives shapes only; anything but the CPU
// would draw from another generator.
bool meta_device(const OpArgs& a, size_t i, std::string_view op) {
  const std::string d = a.str(i);
  if (d.find("meta") != std::string::npos) return true;
  KILN_USER_CHECK(d.find("cpu") != std::string::npos, op, ": draws on device '", d,
                  "' come from that device's generator, which Kiln's CPU kernels do not reproduce");
  return false;
}

Tensor draw_seeds(const Shape& sizes, bool meta) {
  Tensor t = meta ? Tensor::meta(sizes, DType::Int64) : Tensor::empty(sizes, DType::Int64);
  if (!meta) random_from_to_(t, 0, kSeedBound);
  return t;
}

ValueList seed_op(const OpArgs& a, bool meta) {
  return one(draw_seeds({}, meta || meta_device(a, 0, "prims::inductor_seed")));
}

ValueList seeds_op(const OpArgs& a, bool meta) {
  int64_t count = a.integer(0);
  KILN_USER_CHECK(count >= 0, "prims::inductor_seeds: count must be non-negative, got ", count);
  return one(draw_seeds({count}, meta || meta_device(a, 1, "prims::inductor_seeds")));
}

// seeds[index].clone(): Python indexing (negative from the end), a fresh 0-dim tensor.
ValueList lookup_seed(const OpArgs& a) {
  Tensor picked = invoke_tensor("aten::select.int", {a[0], int64_t(0), a[1]});
  return invoke("aten::clone", {picked});
}

Shape random_size(const OpArgs& a, size_t i, std::string_view op) {
  Shape sizes = a.ints(i);
  for (int64_t s : sizes) KILN_USER_CHECK(s >= 0, op, ": negative dimension ", s, " in size ", shape_str(sizes));
  return sizes;
}

ValueList random_op(const OpArgs& a, bool meta) {
  constexpr std::string_view op = "prims::inductor_random";
  Shape sizes = random_size(a, 0, op);
  const std::string mode = a.str(2);
  KILN_USER_CHECK(mode == "rand" || mode == "randn", op, ": mode must be 'rand' or 'randn', got '", mode, "'");
  meta = meta || a.tensor(1).is_meta();
  if (meta) return one(Tensor::meta(sizes, DType::Float32));
  Tensor out = Tensor::empty(sizes, DType::Float32);
  if (mode == "rand") uniform_(out, 0.0, 1.0);
  else normal_(out, 0.0, 1.0);
  return one(out);
}

ValueList randint_op(const OpArgs& a, bool meta) {
  constexpr std::string_view op = "prims::inductor_randint";
  const int64_t low = a.integer(0), high = a.integer(1);
  Shape sizes = random_size(a, 2, op);
  KILN_USER_CHECK(low < high, "random_ expects 'from' to be less than 'to', but got from=", low, " >= to=", high);
  meta = meta || a.tensor(3).is_meta();
  if (meta) return one(Tensor::meta(sizes, DType::Int64));
  Tensor out = Tensor::empty(sizes, DType::Int64);
  random_from_to_(out, low, high);
  return one(out);
}

void add_random(OpRegistry& r, std::string_view schema, ValueList (*fn)(const OpArgs&, bool)) {
  r.add(schema, [fn](const OpArgs& a) { return fn(a, true); }, [fn](const OpArgs& a) { return fn(a, false); });
}

}  // namespace

void register_inductor_random_ops(OpRegistry& r) {
  add_random(r, "prims::inductor_seed(Device device) -> Tensor", seed_op);
  add_random(r, "prims::inductor_seeds(int count, Device device) -> Tensor", seeds_op);
  r.add("prims::inductor_lookup_seed(Tensor seeds, int index) -> Tensor", lookup_seed, lookup_seed);
  add_random(r, "prims::inductor_random(SymInt[] size, Tensor seed, str mode) -> Tensor", random_op);
  add_random(r, "prims::inductor_randint(SymInt low, SymInt high, SymInt[] size, Tensor seed) -> Tensor", randint_op);
}

}  // namespace kiln
