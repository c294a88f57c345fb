#include "compiler/capture/graph_module_object.h"

#include <algorithm>

#include "compiler/capture/target_repr.h"
#include "core/graph/printer.h"
#include "core/python/vm.h"

namespace kiln::capture {

namespace {

using py::Value;

// FX's Graph.print_tabular, as tabulate's default ("simple") format lays it
// out: each column as wide as its widest cell and at least its header plus
// two, two spaces apart, dashes under the headers, trailing blanks stripped
// from every line. Callable targets print as their str() (target_repr).
std::string tabular(const Graph& g) {
  std::vector<std::vector<std::string>> rows = {{"opcode", "name", "target", "args", "kwargs"}};
  for (const Node& n : g.nodes) {
    std::string args = "(";
    for (size_t i = 0; i < n.args.size(); ++i) args += (i ? ", " : "") + print_arg(g, n.args[i]);
    args += n.args.size() == 1 ? ",)" : ")";
    std::string kwargs = "{";
    for (size_t i = 0; i < n.kwargs.size(); ++i)
      kwargs += (i ? ", '" : "'") + n.kwargs[i].first + "': " + print_arg(g, n.kwargs[i].second);
    kwargs += "}";
    rows.push_back({std::string(op_kind_name(n.op)), n.name, target_repr(n), args, kwargs});
  }
  std::vector<size_t> width(5, 0);
  for (size_t c = 0; c < 5; ++c) width[c] = rows[0][c].size() + 2;
  for (const auto& r : rows)
    for (size_t c = 0; c < 5; ++c) width[c] = std::max(width[c], r[c].size());
  auto line = [&](const std::vector<std::string>& r) {
    std::string out;
    for (size_t c = 0; c < 5; ++c) out += (c ? "  " : "") + r[c] + std::string(width[c] - r[c].size(), ' ');
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(rows[0]);
  for (size_t c = 0; c < 5; ++c) out += (c ? "  " : "") + std::string(width[c], '-');
  out += "\n";
  for (size_t i = 1; i < rows.size(); ++i) out += line(rows[i]);
  return out;
}

// GraphModule.code: the forward as FX generates it, outside its class, with
// Dynamo's torch.Tensor annotations on tensor inputs and FX's indented last line.
std::string forward_code(const Graph& g) {
  PrintOptions o;
  o.verbose = false;
  std::string text = print_graph_module(g, o);
  size_t def = text.find("def forward(");
  if (def == std::string::npos) return text;
  std::string signature = "def forward(self";
  for (const Node& n : g.nodes)
    if (n.op == OpKind::Placeholder) signature += ", " + n.target + (n.meta.val.is_tensor() ? " : torch.Tensor" : "");
  signature += "):";
  std::string out = "\n\n\n" + signature + "\n";
  // Dedent the method's lines by the class body's four spaces.
  size_t pos = text.find('\n', def);
  pos = pos == std::string::npos ? text.size() : pos + 1;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    if (line.starts_with("    ")) line.erase(0, 4);
    if (!line.empty()) out += line + "\n";
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return out + "    ";
}

py::Ref<py::Class> plain_class(const char* name, const char* module) {
  auto cls = py::make<py::Class>(name, py::Ref<py::Class>());
  cls->qualname = name;
  cls->module = module;
  return cls;
}

}  // namespace

Value make_graph_module(py::VM&, std::shared_ptr<const RegionResult> region) {
  const Graph& g = region->graph;
  auto graph_cls = plain_class("Graph", "torch.fx.graph");
  const std::string table = tabular(g);
  py::set_attr_builtin(graph_cls->dict, "Graph.print_tabular", "print_tabular", [table](py::VM& vm, const py::CallArgs&) {
    vm.write_out(table);
    return Value();
  });
  const std::string readable = print_graph_module(g);
  py::set_attr_builtin(graph_cls->dict, "Graph.__str__", "__str__",
                       [readable](py::VM&, const py::CallArgs&) { return py::str_value(readable); });
  auto graph = py::make<py::Instance>(graph_cls);
  auto node_cls = plain_class("Node", "torch.fx.node");
  py::set_attr_builtin(node_cls->dict, "Node.__repr__", "__repr__", [](py::VM& vm, const py::CallArgs& a) {
    return vm.getattr(a[0], "name");
  });
  py::ValueVec nodes;
  for (const Node& n : g.nodes) {
    auto node = py::make<py::Instance>(node_cls);
    node->dict->set(py::str_value("op"), py::str_value(std::string(op_kind_name(n.op))));
    node->dict->set(py::str_value("name"), py::str_value(n.name));
    node->dict->set(py::str_value("target"), py::str_value(n.target));
    nodes.push_back(Value(node));
  }
  graph->dict->set(py::str_value("nodes"), py::list_value(std::move(nodes)));

  auto gm_cls = plain_class("GraphModule", "torch.fx.graph_module");
  py::BuiltinFn forward = [region](py::VM& vm, const py::CallArgs& a) {
    std::vector<Value> inputs(a.pos, a.pos + a.npos);
    if (a.npos > 0 && a[0].is(py::ObjKind::Instance) && a[0].as<py::Instance>()->cls->name == "GraphModule")
      inputs.erase(inputs.begin());  // called through the class: self first
    if (inputs.size() != region->inputs.size())
      throw py::PyError("TypeError", "forward() takes " + std::to_string(region->inputs.size()) + " inputs but " +
                                         std::to_string(inputs.size()) + " were given");
    return py::tuple_value(run_graph(vm, *region, inputs));
  };
  py::set_attr_builtin(gm_cls->dict, "GraphModule.forward", "forward", forward);
  py::set_attr_builtin(gm_cls->dict, "GraphModule.__call__", "__call__", forward);
  py::set_attr_builtin(gm_cls->dict, "GraphModule.print_readable", "print_readable",
                       [readable](py::VM& vm, const py::CallArgs& a) {
                         const py::Value* print_output = a.kwarg("print_output");
                         if (!print_output || vm.truth(*print_output)) vm.write_out(readable);
                         return py::str_value(readable);
                       });
  auto gm = py::make<py::Instance>(gm_cls);
  gm->dict->set(py::str_value("graph"), Value(graph));
  gm->dict->set(py::str_value("code"), py::str_value(forward_code(g)));
  return Value(gm);
}

}  // namespace kiln::capture
