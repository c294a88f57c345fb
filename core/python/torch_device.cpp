#include "core/python/torch_device.h"

#include <algorithm>
#include <vector>

namespace kiln::py {

namespace {

void collect_tensors(const Value& v, std::vector<const TensorObj*>& out, int depth = 0) {
  if (v.is(ObjKind::Tensor)) {
    out.push_back(v.as<TensorObj>());
  } else if (depth < 2 && (v.is(ObjKind::List) || v.is(ObjKind::Tuple))) {
    const ValueVec& items = v.is(ObjKind::List) ? v.as<List>()->items : v.as<Tuple>()->items;
    for (const Value& x : items) collect_tensors(x, out, depth + 1);
  }
}

// Ops whose tensor arguments may sit on different devices: copies between
// devices, and CPU index tensors into a CUDA tensor.
bool crosses_devices(const std::string& op) {
  static const char* const kOps[] = {"copy_", "to", "type_as", "__getitem__", "__setitem__", "index", "index_put",
                                     "index_put_", "new_tensor", "set_", "cuda", "cpu", "operator.getitem", "operator.setitem"};
  return std::any_of(std::begin(kOps), std::end(kOps), [&](const char* k) { return op == k; });
}

}  // namespace

std::string call_device(const std::string& op, const CallArgs& a, const std::string& given) {
  std::vector<const TensorObj*> tensors;
  for (size_t i = 0; i < a.npos; ++i) collect_tensors(a[i], tensors);
  if (a.kw)
    for (const auto& [k, v] : *a.kw) collect_tensors(v, tensors);
  std::string common, weak;
  for (const TensorObj* t : tensors) {
    const bool wrapped_number = t->device == "cpu" && t->t.dim() == 0;
    if (wrapped_number) {
      if (weak.empty()) weak = t->device;
      continue;
    }
    if (common.empty()) common = t->device;
    else if (t->device != common && !crosses_devices(op))
      throw PyError("RuntimeError", "Expected all tensors to be on the same device, but found at least two devices, " +
                                        common + " and " + t->device + "! (in " + op + ")");
  }
  if (!given.empty()) return given;
  if (!common.empty()) return common;
  return weak.empty() ? "cpu" : weak;
}

void place_results(const Value& out, const CallArgs& a, const std::string& device) {
  std::vector<const TensorObj*> results, args;
  collect_tensors(out, results);
  if (out.is(ObjKind::Instance))  // named tuples (torch.return_types.max)
    for (const auto& [k, v] : out.as<Instance>()->dict->items()) collect_tensors(v, results);
  for (size_t i = 0; i < a.npos; ++i) collect_tensors(a[i], args);
  for (const TensorObj* t : results)
    if (std::find(args.begin(), args.end(), t) == args.end()) const_cast<TensorObj*>(t)->device = device;
}

}  // namespace kiln::py
