#include "compiler/aot/tape.h"

#include <map>

#include "compiler/aot/grad_ops.h"

namespace kiln::aot {

std::vector<Var> RecordingEmitter::call(std::string_view op, const std::vector<EArg>& args, const EKwargs& kwargs) {
  std::vector<Var> outs = inner_.call(op, args, kwargs);
  calls_.push_back(GradCall{std::string(op), args, kwargs, outs});
  return outs;
}

GradList backprop(Emitter& e, const std::vector<GradCall>& calls, const std::vector<Var>& outputs,
                  const GradList& grad_outputs, const std::vector<Var>& wrt) {
  std::map<int32_t, Var> acc;
  auto accumulate = [&](Var v, Var g) {
    auto [it, fresh] = acc.emplace(v.id, g);
    if (!fresh) it->second = add(e, it->second, g);
  };
  for (size_t i = 0; i < outputs.size() && i < grad_outputs.size(); ++i)
    if (grad_outputs[i]) accumulate(outputs[i], *grad_outputs[i]);
  for (auto c = calls.rbegin(); c != calls.rend(); ++c) {
    GradList gouts;
    bool any = false;
    for (Var o : c->outputs) {
      auto it = acc.find(o.id);
      gouts.push_back(it == acc.end() ? std::nullopt : std::optional<Var>(it->second));
      any |= it != acc.end();
    }
    if (!any) continue;
    GradList gins = differentiate(e, *c, gouts);
    std::vector<Var> ins = tensor_inputs(*c);
    for (size_t k = 0; k < ins.size() && k < gins.size(); ++k)
      if (gins[k]) accumulate(ins[k], *gins[k]);
  }
  GradList out;
  for (Var w : wrt) {
    auto it = acc.find(w.id);
    out.push_back(it == acc.end() ? std::nullopt : std::optional<Var>(it->second));
  }
  return out;
}

}  // namespace kiln::aot
