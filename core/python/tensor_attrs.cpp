// Attributes a program sets on a tensor of its own (`pe.require_grad = False`,
// `p._no_weight_decay = True`): PyTorch keeps them in the tensor's __dict__.
// TensorObj has no dict, so the VM keeps one per tensor in a side table keyed
// by the object and its serial number (an address reused by a later tensor
// does not inherit them). A dead tensor's entry stays until the VM ends.
#include <unordered_map>

#include "core/python/pytorch_names.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

struct Entry {
  uint64_t serial = 0;
  Ref<Dict> dict;
};
using Table = std::unordered_map<const Object*, Entry>;

Table& table(VM& vm) {
  auto& slot = vm.extensions["tensor_attributes"];
  if (!slot) slot = std::make_shared<Table>();
  return *std::static_pointer_cast<Table>(slot);
}

}  // namespace

// A name PyTorch's Tensor has (a method or property) is not the program's own.
bool tensor_user_attr_allowed(std::string_view name) {
  return !(name.starts_with("__") && name.ends_with("__")) && !pytorch_has("Tensor", name).value_or(false);
}

void set_tensor_user_attr(VM& vm, const Object* t, std::string_view name, Value value) {
  Entry& e = table(vm)[t];
  if (!e.dict || e.serial != t->serial) e = Entry{t->serial, make<Dict>()};
  e.dict->set(str_value(std::string(name)), std::move(value));
}

bool tensor_user_attr(VM& vm, const Object* t, std::string_view name, Value& out) {
  auto it = vm.extensions.find("tensor_attributes");
  if (it == vm.extensions.end() || !it->second) return false;
  const Table& tab = *std::static_pointer_cast<Table>(it->second);
  auto found = tab.find(t);
  if (found == tab.end() || found->second.serial != t->serial) return false;
  if (const Value* v = found->second.dict->find_str(name)) {
    out = *v;
    return true;
  }
  return false;
}

}  // namespace kiln::py
