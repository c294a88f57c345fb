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
  // The Python functions of Kiln's library that the capture keeps whole
  // (__kiln_graph_target__): their str() in PyTorch 2.11 with einops 0.8.
  static const std::unordered_map<std::string, std::string> whole = [] {
    const std::string at = " at 0x7f0000000000>";
    std::unordered_map<std::string, std::string> t;
    for (const char* cell : {"lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"})
      t.emplace(std::string("torch.") + cell, std::string("<built-in method ") + cell + " of type object" + at);
    t.emplace("torch.nn.functional.multi_head_attention_forward", "<function multi_head_attention_forward" + at);
    for (const char* f : {"rearrange", "repeat", "reduce", "einsum"})
      t.emplace(std::string("einops.einops.") + f, std::string("<function ") + f + at);
    for (const char* f : {"pack", "unpack"})
      t.emplace(std::string("einops.packing.") + f, std::string("<function ") + f + at);
    t.emplace("torch._C._log_api_usage_once",
              "<built-in method _log_api_usage_once of pybind11_builtins.pybind11_detail_function_record_v1_system_"
              "libstdcpp_gxx_abi_1xxx_use_cxx11_abi_1 object" + at);
    return t;
  }();
  if (auto w = whole.find(n.target); w != whole.end()) return w->second;
  // A Python builtin (getattr, isinstance) is recorded under its bare name.
  if (n.target.find('.') == std::string::npos) return "<built-in function " + n.target + ">";
  return n.target;
}

}  // namespace kiln::capture
