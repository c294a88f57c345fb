#include "compiler/capture/target_repr.h"

#include <unordered_map>

#include "core/python/torch_api.h"

namespace kiln::capture {

namespace {

const std::unordered_map<std::string, std::string>& reprs_by_target() {
  static const std::unordered_map<std::string, std::string> table = [] {
    std::unordered_map<std::string, std::string> t;
    for (const std::string& m : torchapi::modules())
      for (const torchapi::Callable* c : torchapi::callables_of(m))
        if (!c->is_method && !c->python_repr.empty()) t.emplace(c->graph_target, c->python_repr);
    return t;
  }();
  return table;
}

}  // namespace

std::string target_repr(const Node& n) {
  if (n.op != OpKind::CallFunction) return n.target;
  // The operator module's functions are builtins named after their attribute.
  if (n.target.starts_with("operator.")) return "<built-in function " + n.target.substr(9) + ">";
  // A HigherOrderOperator's str() is its name: torch.ops.higher_order.cond is "cond".
  if (n.target.starts_with("higher_order::")) return n.target.substr(14);
  auto it = reprs_by_target().find(n.target);
  if (it != reprs_by_target().end()) return it->second;
  // A Python builtin (getattr, isinstance) is recorded under its bare name.
  if (n.target.find('.') == std::string::npos) return "<built-in function " + n.target + ">";
  return n.target;
}

}  // namespace kiln::capture
