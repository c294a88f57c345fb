#include "compiler/capture/explain_output.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "compiler/capture/target_repr.h"

namespace kiln::capture {

namespace {

// Stand-ins for CPython object ids and addresses, of the form 2.11 prints.
constexpr const char* kFakeAddress = "0x7f0000000000";
constexpr const char* kFakeId = "139637976727552";

// Python's repr of a str, as a list of strings prints it: single quotes unless
// the text holds one and no double quote.
std::string py_str_repr(const std::string& s) {
  const bool dq = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = dq ? '"' : '\'';
  std::string out(1, q);
  for (char c : s) {
    if (c == q || c == '\\') out += '\\';
    out += c;
  }
  return out + q;
}

std::string list_of(const std::string& item) { return "[" + py_str_repr(item) + "]"; }

OutGuard state_guard(const char* create_fn, const char* source = "global") {
  OutGuard g;
  g.source = source;
  g.create_fn = create_fn;
  g.guard_types = g.code_list = "None";
  return g;
}

std::string class_weakref(const std::string& metatype, const std::string& cls) {
  return std::string("<weakref at ") + kFakeAddress + "; to '" + metatype + "' at " + kFakeAddress + " (" + cls + ")>";
}

OutGuard from_guard(const Guard& k) {
  OutGuard g;
  g.name = k.source ? k.source->str() : "";
  g.source = g.name.starts_with("G[") ? "global" : "local";
  switch (k.kind) {
    case Guard::Kind::TensorMatch: {
      g.create_fn = "TENSOR_MATCH";
      g.guard_types = list_of("TENSOR_MATCH");
      g.code_list = list_of("hasattr(" + g.name + ", '_dynamo_dynamic_indices') == False");
      g.object_type = "Tensor";
      g.class_weakref = class_weakref("torch._C._TensorMeta", "Tensor");
      return g;
    }
    case Guard::Kind::EqualsMatch:
      g.create_fn = "CONSTANT_MATCH";
      g.guard_types = list_of("EQUALS_MATCH");
      g.code_list = list_of(k.text());
      g.class_weakref = class_weakref("type", py::type_name(k.expected));
      return g;
    case Guard::Kind::TypeMatch:
      g.create_fn = "TYPE_MATCH";
      g.guard_types = list_of("TYPE_MATCH");
      g.code_list = list_of("___check_type_id(" + g.name + ", " + kFakeId + "), type=" + py::repr(k.expected));
      g.class_weakref = class_weakref("type", "type");
      return g;
    default:
      g.create_fn = k.kind_name();
      g.guard_types = list_of(k.kind_name());
      break;
  }
  g.code_list = list_of(k.text());
  g.class_weakref = "None";
  return g;
}

}  // namespace

std::vector<OutGuard> out_guards(const RegionResult& region) {
  // What every output graph guards, in the order OutputGraph adds them.
  std::vector<OutGuard> out = {state_guard("SHAPE_ENV", "shape_env"), state_guard("DETERMINISTIC_ALGORITHMS"),
                               state_guard("GRAD_MODE"), state_guard("DEFAULT_DEVICE"), state_guard("GLOBAL_STATE"),
                               state_guard("TORCH_FUNCTION_STATE"), state_guard("AUTOGRAD_SAVED_TENSORS_HOOKS")};
  out[3].guard_types = list_of("DEFAULT_DEVICE");
  out[3].code_list = list_of("utils_device.CURRENT_DEVICE == None");
  out[6].guard_types = list_of("AUTOGRAD_SAVED_TENSORS_HOOKS");
  out[6].code_list = list_of("torch._functorch.aot_autograd.utils.top_saved_tensors_hooks ids == None");
  for (OutGuard& g : out) g.class_weakref = "None";
  // Dynamo guards a value when the trace first uses it: a global as it is
  // read, an input as it becomes a graph input. The others follow.
  std::map<std::string, size_t> input_index;
  for (size_t i = 0; i < region.inputs.size(); ++i) input_index.emplace(region.inputs[i]->str(), i);
  std::vector<std::pair<size_t, const Guard*>> inputs;
  std::vector<const Guard*> rest;
  for (const Guard& k : region.guards) {
    if (k.kind == Guard::Kind::GradMode) continue;
    // What a break left on the stack and the resumed code drops unused (print's
    // None): Dynamo guards a resume argument only when the code uses it.
    if (k.kind == Guard::Kind::EqualsMatch && k.expected.is_none() && k.source && k.source->str().starts_with("L['___stack"))
      continue;
    auto it = k.source ? input_index.find(k.source->str()) : input_index.end();
    if (k.kind == Guard::Kind::TensorMatch && it != input_index.end()) inputs.emplace_back(it->second, &k);
    else rest.push_back(&k);
  }
  std::stable_sort(inputs.begin(), inputs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  auto input_guard = [&](const std::pair<size_t, const Guard*>& in) {
    OutGuard g = from_guard(*in.second);
    if (in.first < region.input_values.size()) g.object = region.input_values[in.first];
    return g;
  };
  size_t next_input = 0;
  auto inputs_up_to = [&](size_t n) {
    while (next_input < inputs.size() && inputs[next_input].first < n) out.push_back(input_guard(inputs[next_input++]));
  };
  for (const GlobalRead& r : region.global_reads) {
    inputs_up_to(r.inputs_before);
    OutGuard g;
    g.name = r.name;
    g.source = "global";
    g.create_fn = r.create_fn;
    if (r.create_fn == "CLOSURE_MATCH") {
      // A Python function: 2.11 lists the guard without its checks.
      g.guard_types = g.code_list = g.class_weakref = "None";
      out.push_back(std::move(g));
      continue;
    }
    g.guard_types = list_of("ID_MATCH");
    g.code_list = list_of("___check_obj_id(" + r.name + ", " + kFakeId + "), type=" + r.repr);
    g.object_type = r.type_name;
    g.class_weakref = class_weakref("type", r.type_name);
    out.push_back(std::move(g));
  }
  inputs_up_to(SIZE_MAX);
  for (const Guard* k : rest) out.push_back(from_guard(*k));
  return out;
}

std::string compile_times_text(const std::vector<CompileTiming>& compiles) {
  // Dynamo's timed phases, each row in the order its first call began.
  std::vector<std::pair<std::string, std::vector<double>>> rows;
  auto add = [&](const std::string& phase, double s) {
    auto it = std::find_if(rows.begin(), rows.end(), [&](const auto& r) { return r.first == phase; });
    if (it == rows.end()) {
      rows.emplace_back(phase, std::vector<double>{});
      it = rows.end() - 1;
    }
    it->second.push_back(s);
  };
  for (const CompileTiming& c : compiles) {
    add("_compile.compile_inner", c.total_s);
    for (int attempt = 0; attempt < (c.restarted ? 2 : 1); ++attempt) {
      add("compile_attempt_" + std::to_string(attempt), c.attempt_s[attempt]);
      // Kiln's trace does these together; its time is the tracing's.
      add("bytecode_tracing", c.attempt_s[attempt]);
      for (const char* phase : {"get_fake_value", "create_proxy", "wrap_to_fake_tensor_and_record", "variable_builder_call"})
        add(phase, 0.0);
    }
    if (c.has_graph) {
      add("insert_deferred_runtime_asserts", 0.0);
      add("OutputGraph.call_user_compiler", 0.0);
    }
    add("build_guards", c.guards_s);
    add("gc", 0.0);
  }
  std::vector<std::pair<std::string, std::string>> cells;
  size_t w0 = std::string("Function").size() + 2, w1 = std::string("Runtimes (s)").size() + 2;
  for (const auto& [phase, times] : rows) {
    std::string t;
    for (size_t i = 0; i < times.size(); ++i) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.4f", times[i]);
      t += (i ? ", " : "") + std::string(buf);
    }
    w0 = std::max(w0, phase.size());
    w1 = std::max(w1, t.size());
    cells.emplace_back(phase, t);
  }
  auto row = [&](const std::string& a, const std::string& b) {
    std::string line = a + std::string(w0 - a.size(), ' ') + "  " + b;
    while (!line.empty() && line.back() == ' ') line.pop_back();
    return line + "\n";
  };
  std::string out = "TorchDynamo compilation metrics:\n" + row("Function", "Runtimes (s)");
  out += std::string(w0, '-') + "  " + std::string(w1, '-') + "\n";
  for (const auto& [a, b] : cells) out += row(a, b);
  out.pop_back();  // tabulate's table ends without a newline
  return out;
}

std::string explain_text(const ExplainData& e) {
  const CallableReport& r = e.report;
  std::string o;
  o += "Graph Count: " + std::to_string(r.graphs.size()) + "\n";
  o += "Graph Break Count: " + std::to_string(r.graph_break_count()) + "\n";
  o += "Op Count: " + std::to_string(r.op_count()) + "\n";
  o += "Break Reasons:\n";
  for (size_t i = 0; i < r.breaks.size(); ++i) {
    const BreakRecord& b = r.breaks[i];
    o += "  Break Reason " + std::to_string(i + 1) + ":\n    Reason: " + b.reason + "\n";
    if (!b.explanation.empty()) o += b.explanation;
    o += "    User Stack:\n";
    o += "      <FrameSummary file " + b.file + ", line " + std::to_string(b.line) + " in " + b.function + ">\n";
  }
  o += "Ops per Graph:\n";
  for (size_t i = 0; i < r.graphs.size(); ++i) {
    o += "  Ops " + std::to_string(i + 1) + ":\n";
    for (const Node& n : r.graphs[i].nodes)
      if (n.op == OpKind::CallFunction) o += "    " + target_repr(n) + "\n";
  }
  o += "Out Guards:\n";
  // A tensor's weakref is dead when only this output holds it.
  std::map<const py::Object*, int64_t> held;
  for (const auto& graph : e.guards)
    for (const OutGuard& g : graph)
      if (g.object.is(py::ObjKind::Tensor)) ++held[g.object.obj()];
  int k = 0;
  for (const auto& graph : e.guards)
    for (const OutGuard& g : graph) {
      o += "  Guard " + std::to_string(++k) + ":\n";
      o += "    Name: " + py_str_repr(g.name) + "\n";
      o += "    Source: " + g.source + "\n";
      o += "    Create Function: " + g.create_fn + "\n";
      o += "    Guard Types: " + g.guard_types + "\n";
      o += "    Code List: " + g.code_list + "\n";
      std::string weak = "None";
      if (!g.object_type.empty()) {
        const bool dead = g.object.is(py::ObjKind::Tensor) && g.object.obj()->refs <= held[g.object.obj()];
        weak = std::string("<weakref at ") + kFakeAddress + "; " +
               (dead ? std::string("dead") : "to '" + g.object_type + "' at " + kFakeAddress) + ">";
      }
      o += "    Object Weakref: " + weak + "\n";
      o += "    Guarded Class Weakref: " + g.class_weakref + "\n";
    }
  o += "Compile Times: " + compile_times_text(e.compiles) + "\n";
  return o;
}

}  // namespace kiln::capture
