// The cache of compiled regions per frame and the torch.compile family.
#include <chrono>
#include <map>
#include <set>
#include <sstream>

#include "compiler/capture/capture.h"
#include "compiler/capture/eager_trace.h"
#include "compiler/capture/explain_output.h"
#include "compiler/capture/graph_module_object.h"
#include "compiler/capture/region_tracer.h"
#include "compiler/capture/trace_writer.h"
#include "core/graph/printer.h"

namespace kiln::capture {

using py::ObjKind;
using py::Value;

namespace {

struct Callable;

struct CacheEntry {
  std::string compile_id;
  RegionResult region;
  const Callable* first_call_of = nullptr;  // made during this callable's first call
  // Made by an explain first call that an older entry would have served: the
  // fresh cache explain emulates needed it, the program's own cache did not,
  // so it does not count toward the frame's recompile limit.
  bool explain_duplicate = false;
  std::map<std::string, int> fail_counts;   // per guard root, for Dynamo's check order
  RegionRunner runner;                       // the backend's; null: run_graph
};

// A frame in Dynamo's sense: a code object entered at one instruction (pc 0, or
// the resume point after a break).
struct FrameInfo {
  int frame_id = -1;
  std::string name;
  std::vector<CacheEntry> entries;  // most recent last
  int compiles = 0;
  TraceSettings settings;
  bool over_limit = false;
};

struct Callable {
  Value target;         // the function or module given to torch.compile
  std::string name;
  bool fullgraph = false;
  std::optional<bool> dynamic;
  std::string backend = "eager";
  Value backend_fn;  // a callable backend= (gm, example_inputs) -> compiled callable
  std::string mode = "default";
  CallableReport report;
  int calls = 0;
  int first_call = -1;     // order of first calls among callables; -1: never called
  bool recording = false;  // true during the first call: what torch._dynamo.explain would see
  bool internal = false;   // made by torch._dynamo.explain, not by the program
  // explain's own: each graph's guards as 2.11 prints them, and each compile's times.
  std::vector<std::vector<OutGuard>> out_guards;
  std::vector<CompileTiming> timings;
  // Frames that hit the recompile limit within this callable's explain first
  // call, which sees a cache of its own (as after torch._dynamo.reset()).
  std::set<const FrameInfo*> fresh_over_limit;
};

// "3/1" -> (3, 1): frame id, then compile number.
std::pair<int, int> compile_order(const std::string& id) {
  return {std::stoi(id), std::stoi(id.substr(id.find('/') + 1))};
}

struct State : py::FrameHook {
  CaptureOptions options;
  std::map<std::pair<const py::Code*, int>, FrameInfo> frames;
  int next_frame_id = 0;
  std::vector<std::shared_ptr<Callable>> callables;
  std::vector<Callable*> active;  // compiled calls in progress, innermost last
  // The frame of a torch.compiler.disable(recursive=False) function about to
  // run: it runs plain, the frames it calls are compiled again.
  const py::Code* plain_frame = nullptr;
  // The next frame is a compiled callable's entry (its function, or its
  // module's forward): torch.nn's own forwards (Sequential, Linear) are traced
  // there, as Dynamo inlines torch.nn, while torch/ frames met later run as
  // library code.
  bool entry_next = false;
  std::unique_ptr<TraceWriter> trace;  // KILN_TRACE; null when off or unwritable
  int first_calls = 0;
  std::set<std::string> warned_config;
  // What torch._dynamo.reset() (and explain, which resets before and after)
  // took out of the caches: no call finds these entries again, but the stage
  // views still list them (compiled_regions). The program's tensor objects
  // are let go, as PyTorch lets them go (explain's weakrefs print "dead"): the
  // entries keep new objects over the same tensors, which lowering reads.
  // A reset restarts compile ids at 0/0, as PyTorch's does, so a retired
  // entry's id says which reset retired it ("0/0 before reset 1"): the views
  // select compiles by id. A program resetting in a loop keeps only the last
  // kMaxRetired, so its memory stays bounded.
  static constexpr size_t kMaxRetired = 256;
  std::vector<CacheEntry> retired;
  int resets = 0;

  void reset_caches() {
    const size_t first = retired.size();
    ++resets;
    for (auto& [key, info] : frames)
      for (CacheEntry& e : info.entries) {
        e.compile_id += " before reset " + std::to_string(resets);
        for (Value& v : e.region.input_values)
          if (v.is(ObjKind::Tensor)) {
            const auto* obj = v.as<py::TensorObj>();
            auto kept = py::make<py::TensorObj>(obj->t);
            kept->requires_grad = obj->requires_grad;
            kept->device = obj->device;
            v = Value(kept);
          }
        retired.push_back(std::move(e));
      }
    std::stable_sort(retired.begin() + ptrdiff_t(first), retired.end(),
                     [](const CacheEntry& a, const CacheEntry& b) { return compile_order(a.compile_id) < compile_order(b.compile_id); });
    if (retired.size() > kMaxRetired) retired.erase(retired.begin(), retired.end() - ptrdiff_t(kMaxRetired));
    frames.clear();
    next_frame_id = 0;
  }

  bool run_frame(py::VM& vm, py::Frame& frame, Value& result) override;
  Value execute(py::VM& vm, py::Frame& frame);
  void log(py::VM& vm, const std::string& compile_id, const char* category, const std::string& text) {
    std::istringstream lines(text);
    std::string line;
    std::string out;
    while (std::getline(lines, line)) out += "[" + compile_id + "] [__" + category + "] " + line + "\n";
    vm.write_err(out);
  }
};

State& state_of(py::VM& vm) { return *std::static_pointer_cast<State>(vm.extensions.at("capture")); }

// A torch._dynamo.config setting as the program left it.
py::Value dynamo_config(py::VM& vm, std::string_view name) {
  py::Ref<py::Module> config = vm.module("torch._dynamo.config");
  const Value* v = config ? config->dict->find_str(name) : nullptr;
  return v ? *v : Value();
}

// config.recompile_limit, or the older name cache_size_limit when only that was changed.
int recompile_limit(py::VM& vm) {
  State& st = state_of(vm);
  int limit = st.options.cache_size_limit;
  for (const char* name : {"recompile_limit", "cache_size_limit"}) {
    Value v = dynamo_config(vm, name);
    if (v.is_int() && v.as_int() != 8) limit = int(std::max<int64_t>(0, v.as_int()));
  }
  return limit;
}

std::string frame_name(const py::Frame& frame) {
  return frame.pc == 0 ? frame.code->name
                       : "torch_dynamo_resume_in_" + frame.code->name + "_at_" +
                             std::to_string(frame.code->code[size_t(frame.pc - 1 >= 0 ? frame.pc - 1 : 0)].line);
}

Value eval_template(py::VM& vm, const StateTemplate& t, const py::Frame& start, const std::vector<Value>& outputs) {
  switch (t.kind) {
    case StateTemplate::Kind::Const: return t.value;
    case StateTemplate::Kind::Output: return outputs.at(size_t(t.output));
    case StateTemplate::Kind::Source: {
      Value v;
      if (!t.source->eval(vm, start, v)) throw py::PyError("RuntimeError", "capture lost " + t.source->str());
      return v;
    }
    case StateTemplate::Kind::Tuple:
    case StateTemplate::Kind::List: {
      py::ValueVec items;
      for (const StateTemplate& x : t.items) items.push_back(eval_template(vm, x, start, outputs));
      if (t.kind == StateTemplate::Kind::List) return py::list_value(std::move(items));
      return Value(py::make<py::Tuple>(std::move(items), t.value.is(ObjKind::Tuple) && t.value.as<py::Tuple>()->is_size));
    }
    case StateTemplate::Kind::Dict: {
      auto d = py::make<py::Dict>();
      for (size_t i = 0; i + 1 < t.items.size(); i += 2)
        d->set(eval_template(vm, t.items[i], start, outputs), eval_template(vm, t.items[i + 1], start, outputs));
      return Value(d);
    }
    case StateTemplate::Kind::Bound: {
      Value self = eval_template(vm, t.items[0], start, outputs);
      // A bound builtin binds again as a copy with the new receiver.
      return py::bind_if_function(self, t.value.is(ObjKind::BoundMethod) ? t.value.as<py::BoundMethod>()->func : t.value);
    }
    case StateTemplate::Kind::NamedTuple: {
      auto inst = py::make<py::Instance>(py::Ref<py::Class>(t.value.as<py::Class>()));
      for (size_t i = 0; i < t.items.size(); ++i) inst->dict->set(t.fields[i], eval_template(vm, t.items[i], start, outputs));
      return Value(inst);
    }
    case StateTemplate::Kind::Unbound: return py::unbound();
    case StateTemplate::Kind::Range: return Value();
  }
  return Value();
}

// What the region did to objects from before it, done again. Every value is
// read before anything changes, as sources and kept list items name the
// state the call started from.
void apply_side_effects(py::VM& vm, const std::vector<SideEffect>& effects, const py::Frame& frame,
                        const std::vector<Value>& outputs) {
  struct Ready {
    Value target;
    py::ValueVec sets, removed, items;
  };
  std::vector<Ready> ready;
  for (const SideEffect& e : effects) {
    Ready r;
    r.target = eval_template(vm, e.target, frame, outputs);
    for (const StateTemplate& t : e.sets) r.sets.push_back(eval_template(vm, t, frame, outputs));
    for (const StateTemplate& t : e.removed) r.removed.push_back(eval_template(vm, t, frame, outputs));
    if (e.is_list) {
      if (!r.target.is(ObjKind::List)) throw py::PyError("RuntimeError", "capture lost the list " + e.target.source->str());
      const py::ValueVec& old = r.target.as<py::List>()->items;
      for (size_t i = 0; i < e.items.size(); ++i)
        r.items.push_back(e.kept[i] >= 0 ? old.at(size_t(e.kept[i])) : eval_template(vm, e.items[i], frame, outputs));
    }
    ready.push_back(std::move(r));
  }
  for (size_t k = 0; k < ready.size(); ++k) {
    Ready& r = ready[k];
    if (effects[k].is_list) {
      r.target.as<py::List>()->items = std::move(r.items);
      continue;
    }
    py::Dict* d = r.target.is(ObjKind::Instance) ? r.target.as<py::Instance>()->dict.get()
                  : r.target.is(ObjKind::Dict)   ? r.target.as<py::Dict>()
                                                 : nullptr;
    if (!d) throw py::PyError("RuntimeError", "capture lost the object " + effects[k].target.source->str());
    for (const Value& key : r.removed) d->erase(key);
    for (size_t i = 0; i + 1 < r.sets.size(); i += 2) d->set(r.sets[i], r.sets[i + 1]);
  }
}

// Runs a cached region on the real frame: the graph on inputs fetched through
// their sources, then the frame rebuilt as the region left it.
bool run_entry(py::VM& vm, py::Frame& frame, const RegionResult& r, const RegionRunner& runner, Value& result) {
  std::vector<Value> inputs;
  for (const SourcePtr& s : r.inputs) {
    Value v;
    if (!s->eval(vm, frame, v)) throw py::PyError("RuntimeError", "capture lost graph input " + s->str());
    inputs.push_back(v);
  }
  std::vector<Value> outputs = runner ? runner(r, inputs) : run_graph(vm, r, inputs);
  vm.grad_enabled = r.grad_enabled_after;
  torchapi::autocast_state() = r.autocast_after;
  apply_side_effects(vm, r.side_effects, frame, outputs);
  for (const DeferredCall& d : r.deferred_calls) {
    py::ValueVec args;
    for (const StateTemplate& t : d.args) args.push_back(eval_template(vm, t, frame, outputs));
    vm.call(d.fn, std::move(args));
  }
  py::ValueVec stack, locals;
  for (const StateTemplate& t : r.stack_after) stack.push_back(eval_template(vm, t, frame, outputs));
  for (const StateTemplate& t : r.locals_after) locals.push_back(eval_template(vm, t, frame, outputs));
  if (r.returned) result = eval_template(vm, r.return_value, frame, outputs);
  frame.stack = std::move(stack);
  frame.locals = std::move(locals);
  frame.pc = r.exit_pc;
  return r.returned;
}

}  // namespace

// While it lives, Python frames run plain, as under Dynamo's disabled eval
// frame: no compiled callable is active.
struct CaptureOff {
  explicit CaptureOff(State& s) : st(s), saved(std::move(s.active)) { st.active.clear(); }
  ~CaptureOff() { st.active = std::move(saved); }
  CaptureOff(const CaptureOff&) = delete;
  CaptureOff& operator=(const CaptureOff&) = delete;
  State& st;
  std::vector<Callable*> saved;
};

// A callable backend, as Dynamo calls one: once per compiled region, with the
// region's GraphModule and its real inputs, at the region's first run; what it
// returns runs the region from then on. Neither runs under capture.
RegionRunner python_backend_runner(py::VM& vm, const Value& backend) {
  struct Compiled {
    Value fn;
    bool made = false;
  };
  auto compiled = std::make_shared<Compiled>();
  return [&vm, backend, compiled](const RegionResult& r, const std::vector<Value>& inputs) {
    CaptureOff off(state_of(vm));
    if (!compiled->made) {
      Value gm = make_graph_module(vm, std::make_shared<const RegionResult>(r));
      compiled->fn = vm.call(backend, py::ValueVec{gm, py::list_value(py::ValueVec(inputs.begin(), inputs.end()))});
      compiled->made = true;
    }
    Value out = vm.call(compiled->fn, py::ValueVec(inputs.begin(), inputs.end()));
    if (out.is(ObjKind::Tuple)) return out.as<py::Tuple>()->items;
    if (out.is(ObjKind::List)) return out.as<py::List>()->items;
    return std::vector<Value>{out};
  };
}

bool State::run_frame(py::VM& vm, py::Frame& frame, Value& result) {
  if (inline_traced_call(vm, frame, result)) return true;
  const bool entry = entry_next;
  entry_next = false;
  if (active.empty() || vm.tracer || PlainPython::active()) return false;
  if (plain_frame && frame.code == plain_frame) {
    plain_frame = nullptr;
    return false;
  }
  // Kiln's own torch code runs as library code, as Dynamo skips torch/ files;
  // the user frames it calls are still compiled. A compiled Function.apply
  // (torch.compile(MyFunction.apply)) is traced, as Dynamo traces it: its
  // graph is the one autograd_function_apply node.
  const bool traced_entry = entry && (frame.code->filename == "torch/nn/modules.py" ||
                                      (frame.code->filename == "torch/autograd/__init__.py" && frame.code->name == "apply"));
  if (frame.code->filename.starts_with("torch/") && !traced_entry) return false;
  result = execute(vm, frame);
  return true;
}

Value State::execute(py::VM& vm, py::Frame& frame) {
  Callable& owner = *active.back();
  frame.parent = vm.current_frame;
  for (;;) {
    FrameInfo& info = frames[{frame.code, frame.pc}];
    if (info.name.empty()) info.name = frame_name(frame);
    // Iterators carried into a resume point cannot be copied or guarded yet: run the rest eagerly.
    bool has_iterator = false;
    for (const Value& v : frame.stack) has_iterator |= v.is(ObjKind::Iterator) || v.is(ObjKind::Range);
    Value result;
    // An explain first call sees only its own entries (as after a reset): the
    // limit it hits is its own too.
    const bool fresh = options.explain_fresh_first_call && owner.recording;
    if (has_iterator || (fresh ? owner.fresh_over_limit.contains(&info) : info.over_limit)) {
      vm.current_frame = frame.parent;
      return vm.run_frame(frame);
    }
    const CacheEntry* hit = nullptr;
    std::vector<std::string> failures;
    std::vector<Guard> failed_guards;  // copies: reordering moves an entry's guards
    for (auto it = info.entries.rbegin(); it != info.entries.rend(); ++it) {
      if (fresh && it->first_call_of != &owner) continue;
      std::string why;
      const Guard* failed = nullptr;
      if (it->region.reusable && check_guards(vm, frame, it->region.guards, &why, &failed)) {
        hit = &*it;
        break;
      }
      if (failed) {
        failed_guards.push_back(*failed);
        reorder_after_failure(it->region.guards, it->fail_counts, failed_guards.back());
      }
      failures.push_back(it->compile_id + ": " + (it->region.reusable ? why : "not reusable (" + it->region.not_reusable_why + ")"));
    }
    // Would the program's own cache have served this explain first call?
    bool program_hit = false;
    if (fresh && !hit)
      for (const CacheEntry& e : info.entries)
        if (e.first_call_of != &owner && e.region.reusable && check_guards(vm, frame, e.region.guards, nullptr, nullptr)) {
          program_hit = true;
          break;
        }
    bool returned;
    bool unresumable = false;  // Dynamo runs the rest of the frame eagerly (an RNN module call)
    if (hit) {
      returned = run_entry(vm, frame, hit->region, hit->runner, result);
      unresumable = hit->region.unresumable;
    } else {
      if (info.frame_id < 0) info.frame_id = next_frame_id++;
      // Automatic dynamic shapes: a size that changed since the last compile
      // becomes symbolic, unless the user asked for static shapes (dynamic=False).
      for (const std::string& f : failures) {
        if (owner.dynamic == false) break;
        size_t at = f.find("size mismatch at index ");
        size_t q1 = f.find("tensor '");
        if (at == std::string::npos || q1 == std::string::npos) continue;
        std::string name = f.substr(q1 + 8, f.find('\'', q1 + 8) - q1 - 8);
        int dim = std::stoi(f.substr(at + 23));
        std::string src = name.starts_with("L[") || name.starts_with("G[") ? name : "L['" + name + "']";
        if (std::find(info.settings.dynamic_dims.begin(), info.settings.dynamic_dims.end(), std::make_pair(src, dim)) ==
            info.settings.dynamic_dims.end())
          info.settings.dynamic_dims.emplace_back(src, dim);
      }
      // Automatic dynamic for numbers: an int or float argument whose value
      // changed becomes a graph input (bools and strings stay specialized).
      for (const Guard& g : failed_guards) {
        if (owner.dynamic == false || g.kind != Guard::Kind::EqualsMatch) continue;
        if (g.expected.is_bool() || !(g.expected.is_int() || g.expected.is_float())) continue;
        std::string src = g.source->str();
        if (std::find(info.settings.dynamic_scalars.begin(), info.settings.dynamic_scalars.end(), src) ==
            info.settings.dynamic_scalars.end())
          info.settings.dynamic_scalars.push_back(src);
      }
      info.settings.all_dynamic = owner.dynamic.value_or(false);
      TraceCompileId tid{info.frame_id, info.compiles, 0};
      std::string cid = std::to_string(info.frame_id) + "/" + std::to_string(info.compiles++);
      if (!failures.empty()) {
        owner.report.recompiles.push_back({cid, info.name, failures});
        if (options.logs.recompiles) {
          std::string text = "Recompiling function " + info.name + " in " + frame.code->filename + ":" +
                             std::to_string(frame.code->firstlineno) + "\n    triggered by the following guard failure(s):\n";
          for (const std::string& f : failures) {
            std::istringstream lines(f);
            for (std::string line; std::getline(lines, line);) text += "    - " + line + "\n";
          }
          log(vm, cid, "recompiles", text);
        }
        if (trace) trace->recompile_reasons(tid, failures);
      }
      // Past the limit the frame runs eagerly from now on; Dynamo logs the
      // recompile it would have made, then says so. Only entries the call could
      // see count: an explain first call's own, or the program's cache less
      // explain's duplicates. So every entry counted failed a guard, and the
      // last reason (Dynamo's newest guard failure) is never empty.
      const int limit = recompile_limit(vm);
      int counted = 0;
      for (const CacheEntry& e : info.entries)
        counted += fresh ? e.first_call_of == &owner : !e.explain_duplicate;
      if (counted >= limit && !failures.empty()) {
        if (fresh) owner.fresh_over_limit.insert(&info);
        else info.over_limit = true;
        std::string text = "torch._dynamo hit config.recompile_limit (" + std::to_string(limit) + ")\n   function: '" +
                           info.name + "' (" + frame.code->filename + ":" + std::to_string(frame.code->firstlineno) +
                           ")\n   last reason: " + failures.front().substr(0, failures.front().find('\n')) +
                           "\nTo log all recompilation reasons, use KILN_LOGS=\"recompiles\".";
        std::istringstream lines(text);
        for (std::string line; std::getline(lines, line);) vm.write_err("[" + cid + "] " + line + "\n");
        continue;
      }
      CompiledFrame traced{info.name, frame.code->filename,
                           frame.pc == 0 ? frame.code->firstlineno : frame.code->code[size_t(frame.pc - 1)].line};
      std::vector<StackFrame> callers;
      if (trace) {
        callers = python_callers(frame);
        trace->dynamo_start(tid, callers, traced);
      }
      CompileMetrics metrics;
      metrics.id = tid;
      metrics.frame = traced;
      metrics.cache_size = metrics.accumulated_cache_size = int(info.entries.size());
      if (!failures.empty()) metrics.recompile_reason = failures.front();
      // Settings Kiln's capture does not model are said out loud once, not ignored.
      for (const char* name : {"capture_scalar_outputs", "capture_dynamic_output_shape_ops"}) {
        if (vm.truth(dynamo_config(vm, name)) && warned_config.insert(name).second)
          vm.write_err(std::string("W kiln capture: torch._dynamo.config.") + name +
                       " = True is not supported; those ops still break the graph\n");
      }
      if (!owner.backend_fn.is_none()) info.settings.runner = python_backend_runner(vm, owner.backend_fn);
      else info.settings.runner = options.backend_runner ? options.backend_runner(owner.backend, owner.mode, cid) : nullptr;
      RegionResult region;
      const auto compile_start = std::chrono::steady_clock::now();
      try {
        region = trace_region(vm, frame, info.settings);
      } catch (const py::PyError& e) {
        if (trace) {
          metrics.fail_type = e.type();
          metrics.fail_reason = e.message();
          metrics.has_guarded_code = false;
          trace->compilation_metrics(metrics);
        }
        throw;
      }
      if (region.break_info && owner.fullgraph) {
        if (trace) {
          metrics.fail_type = "Unsupported";
          metrics.fail_reason = region.break_info->reason + "\n" + region.break_info->explanation;
          metrics.fail_user_frame_filename = region.break_record.file;
          metrics.fail_user_frame_lineno = region.break_record.line;
          metrics.has_guarded_code = false;
          trace->compilation_metrics(metrics);
        }
        throw py::PyError("torch._dynamo.exc.Unsupported", region.break_info->reason + "\n" + region.break_info->explanation);
      }
      // Dynamo logs the break in the attempt that found it; after a restart the graph is attempt 1's.
      if (trace && region.break_info) trace->graph_break(tid, region.break_record, callers);
      if (region.restarted) {
        cid += "_1";
        tid.attempt = metrics.id.attempt = 1;
        metrics.restart_reasons = {region.break_info->reason + "\n" + region.break_info->explanation};
      }
      returned = region.returned;
      if (returned) {
        result = frame.stack.back();
        frame.stack.pop_back();
      }
      if (owner.internal) {
        CompileTiming t;
        t.restarted = region.restarted;
        t.has_graph = region.op_count > 0;
        t.total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - compile_start).count();
        // A restarted trace stops at the break; Kiln traces once, so the time goes to the attempt that kept the graph.
        t.attempt_s[region.restarted ? 1 : 0] = t.total_s;
        owner.timings.push_back(t);
        if (region.op_count > 0) owner.out_guards.push_back(out_guards(region));
      }
      unresumable = region.unresumable;
      if (region.op_count > 0 && !region.frame_skipped) {
        std::vector<std::string> guard_texts;
        for (const Guard& g : region.guards) guard_texts.push_back(g.kind_name() + ": " + g.text());
        // explain lists a break only with the graph compiled at it, as Dynamo's explain backend does.
        if (owner.recording) {
          owner.report.graphs.push_back(region.graph);
          owner.report.guards.push_back(guard_texts);
          if (region.break_info) owner.report.breaks.push_back(region.break_record);
        }
        if (options.logs.dynamic) {
          // Each symbolic size of an input, as Dynamo's create_symbol lines name them.
          size_t input = 0;
          for (const Node& n : region.graph.nodes) {
            if (n.op != OpKind::Placeholder) continue;
            const py::Value& real = region.input_values.at(input);
            const SourcePtr& src = region.inputs.at(input++);
            if (!n.meta.val.is_tensor() || !real.is(ObjKind::Tensor)) continue;
            const std::vector<SymInt>& sizes = n.meta.val.tensor.sizes;
            for (size_t d = 0; d < sizes.size(); ++d)
              if (sizes[d].is_symbolic())
                log(vm, cid, "dynamic", "create_symbol " + sizes[d].expr + " = " + std::to_string(real.as<py::TensorObj>()->t.sizes()[d]) +
                                            " for " + src->str() + ".size()[" + std::to_string(d) + "] [2, int_oo]");
          }
        }
        if (options.logs.graph_code)
          log(vm, cid, "graph_code", "TRACED GRAPH\n ===== __compiled_fn =====\n" + print_graph_module(region.graph));
        if (options.logs.guards) {
          std::string text = "GUARDS:\n";
          for (const std::string& g : guard_texts) text += "| +- " + g + "\n";
          log(vm, cid, "guards", text);
        }
        if (trace) trace->output_graph(tid, region.graph);
      }
      if (region.break_info) {
        if (options.logs.graph_breaks)
          log(vm, cid, "graph_breaks", "Graph break in user code at " + region.break_record.file + ":" +
                                           std::to_string(region.break_record.line) + "\nGraph Break Reason: " +
                                           region.break_info->reason + "\n" + region.break_info->explanation);
      }
      if (trace) {
        trace->guards(tid, region.guards);
        metrics.graph = &region.graph;
        metrics.guard_count = int(region.guards.size());
        metrics.has_guarded_code = region.reusable;
        trace->compilation_metrics(metrics);
      }
      CacheEntry entry;
      entry.compile_id = cid;
      entry.region = std::move(region);
      entry.first_call_of = owner.recording ? &owner : nullptr;
      entry.explain_duplicate = fresh && program_hit;
      entry.runner = std::move(info.settings.runner);
      info.settings.runner = nullptr;
      info.entries.push_back(std::move(entry));
    }
    if (returned) return result;
    if (unresumable) {
      // "Compiling up to the previous resumable state, then skipping the rest of the function."
      vm.current_frame = frame.parent;
      return vm.run_frame(frame);
    }
    // The breaking instruction runs eagerly; calls it makes are compiled as frames of their own.
    vm.current_frame = &frame;
    bool done = false;
    try {
      done = vm.step(frame, result);
    } catch (py::PyError& e) {
      // A handler of this frame takes it; the frame goes on (and is compiled) from there.
      const bool handled = vm.handle_exception(frame, e);
      vm.current_frame = frame.parent;
      if (!handled) throw;
    } catch (...) {
      vm.current_frame = frame.parent;
      throw;
    }
    vm.current_frame = frame.parent;
    if (done) return result;
  }
}

int CallableReport::op_count() const {
  int n = 0;
  for (const Graph& g : graphs) n += int(count_nodes(g, OpKind::CallFunction));
  return n;
}

LogConfig LogConfig::parse(std::string_view spec) {
  LogConfig c;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    std::string_view item = spec.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    while (!item.empty() && (item.front() == '+' || item.front() == ' ')) item.remove_prefix(1);
    if (item == "graph_breaks") c.graph_breaks = true;
    if (item == "guards") c.guards = true;
    if (item == "recompiles" || item == "recompiles_verbose") c.recompiles = true;
    if (item == "graph_code" || item == "graph") c.graph_code = true;
    if (item == "dynamic") c.dynamic = true;
    if (item == "dynamo") c.graph_breaks = c.guards = c.recompiles = c.graph_code = true;
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return c;
}

namespace {

const char* const kModes[] = {"default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"};
const char* const kBackends[] = {"eager", "aot_eager", "decomp_eager", "inductor", "kiln", "kiln-cuda"};

std::string callable_name(py::VM& vm, const Value& fn) {
  Value n;
  if (vm.try_getattr(fn, "__name__", n) && n.is(ObjKind::Str)) return n.as<py::Str>()->s;
  return py::type_name(fn);
}

Value wrap_compiled(py::VM& vm, std::shared_ptr<Callable> c) {
  State& st = state_of(vm);
  st.callables.push_back(c);
  Callable* raw = c.get();
  auto b = py::make<py::Builtin>("torch._dynamo.OptimizedFunction", [raw](py::VM& vm, const py::CallArgs& a) -> Value {
    State& st = state_of(vm);
    if (vm.tracer) return vm.call(raw->target, a);  // compiled code called from a traced region is inlined
    Value fn = raw->target;
    if (fn.is(ObjKind::Instance)) fn = vm.getattr(fn, "forward");
    if (raw->calls++ == 0) raw->first_call = st.first_calls++;
    bool was_recording = raw->recording;
    raw->recording = raw->recording || raw->calls == 1;
    st.active.push_back(raw);
    struct Pop {
      State& st;
      Callable* c;
      bool was;
      ~Pop() {
        st.active.pop_back();
        c->recording = was;
      }
    } pop{st, raw, was_recording};
    st.entry_next = true;
    return vm.call(fn, a);
  });
  b->tag = raw;
  return Value(b);
}

Value torch_compile(py::VM& vm, const py::CallArgs& a) {
  auto c = std::make_shared<Callable>();
  c->backend = state_of(vm).options.default_backend;
  bool disable = state_of(vm).options.disable_compile;
  if (a.kw) {
    for (const auto& [k, v] : *a.kw) {
      if (k == "fullgraph") c->fullgraph = vm.truth(v);
      else if (k == "dynamic") { if (!v.is_none()) c->dynamic = vm.truth(v); }
      else if (k == "backend") {
        if (!v.is(ObjKind::Str)) {
          if (!vm.truth(vm.call(*vm.builtins()->find_str("callable"), py::ValueVec{v})))
            throw py::PyError("torch._dynamo.exc.InvalidBackend", "Invalid backend: '" + vm.str_of(v) +
                                                                      "', see `torch._dynamo.list_backends()` for available backends.");
          c->backend_fn = v;
          continue;
        }
        c->backend = v.as<py::Str>()->s;
        if (std::find(std::begin(kBackends), std::end(kBackends), c->backend) == std::end(kBackends))
          throw py::PyError("torch._dynamo.exc.InvalidBackend", "Invalid backend: '" + c->backend + "', see `torch._dynamo.list_backends()` for available backends.");
      } else if (k == "mode") {
        if (v.is_none()) continue;
        c->mode = py::as_str(v);
        if (std::find(std::begin(kModes), std::end(kModes), c->mode) == std::end(kModes))
          throw py::PyError("RuntimeError", "Unrecognized mode=" + c->mode + ", should be one of: default, reduce-overhead, max-autotune, max-autotune-no-cudagraphs");
      } else if (k == "options") {
        if (!v.is_none() && !v.is(ObjKind::Dict)) throw py::PyError("TypeError", "options must be a dict");
      } else if (k == "disable") disable = disable || vm.truth(v);
      else throw py::PyError("TypeError", "compile() got an unexpected keyword argument '" + k + "'");
    }
  }
  if (a.npos > 1) throw py::PyError("TypeError", "compile() takes 1 positional argument but " + std::to_string(a.npos) + " were given");
  if (a.npos == 0) {
    // Decorator form: torch.compile(fullgraph=True)(fn).
    std::vector<std::pair<std::string, Value>> kw = a.kw ? *a.kw : std::vector<std::pair<std::string, Value>>{};
    return py::make_builtin("torch.compile.<decorator>", [kw](py::VM& vm, const py::CallArgs& inner) {
      auto k = kw;
      return torch_compile(vm, py::CallArgs{inner.pos, inner.npos, &k});
    });
  }
  if (disable) return a[0];
  c->target = a[0];
  c->name = callable_name(vm, a[0]);
  Value compiled = wrap_compiled(vm, c);
  if (a[0].is(ObjKind::Instance)) {
    // A module compiles into an OptimizedModule wrapping it, as in PyTorch.
    py::Ref<py::Module> dynamo = vm.module("torch._dynamo");
    const Value* cls = dynamo ? dynamo->dict->find_str("_OptimizedModule") : nullptr;
    const Value* nn_module = vm.module("torch.nn") ? vm.module("torch.nn")->dict->find_str("Module") : nullptr;
    if (cls && nn_module && vm.type_of(a[0])->is_subclass_of(nn_module->as<py::Class>()))
      return vm.call(*cls, py::ValueVec{a[0], compiled});
  }
  return compiled;
}

}  // namespace

void install_capture(py::VM& vm, CaptureOptions options) {
  auto st = std::make_shared<State>();
  st->options = std::move(options);
  if (!st->options.trace_dir.empty())
    st->trace = TraceWriter::open(st->options.trace_dir, [&vm](const std::string& warning) { vm.write_err(warning + "\n"); });
  vm.extensions["capture"] = st;
  vm.frame_hook = st.get();
  auto hook = [&vm](const char* name, py::BuiltinFn fn) {
    vm.extensions[name] = std::make_shared<py::BuiltinFn>(std::move(fn));
  };
  hook("torch.compile", torch_compile);
  hook("torch.cond.traced", traced_cond);
  hook("torch.autograd.Function.apply.traced", traced_function_apply);
  hook("torch.amp.autocast.traced", traced_autocast_marker);
  install_eager_trace(vm);
  hook("torch._dynamo.reset", [](py::VM& vm, const py::CallArgs&) {
    state_of(vm).reset_caches();
    return Value();
  });
  // torch.compiler.disable(fn=None, recursive=True, *, reason=None): fn and
  // what it calls run eagerly (with recursive=False only fn's own frame: the
  // functions it calls are compiled again); called from a traced frame it
  // breaks the graph, as Dynamo skips it.
  hook("torch._dynamo.disable", [](py::VM& vm, const py::CallArgs& a) -> Value {
    Value fn = a.npos >= 1 ? a[0] : Value();
    bool recursive = a.npos >= 2 ? vm.truth(a[1]) : true;
    Value reason;
    if (a.kw)
      for (const auto& [k, v] : *a.kw) {
        if (k == "fn") fn = v;
        else if (k == "recursive") recursive = vm.truth(v);
        else if (k == "reason") reason = v;
        else throw py::PyError("TypeError", "disable() got an unexpected keyword argument '" + k + "'");
      }
    const std::string why = reason.is_none() ? "None" : vm.str_of(reason);
    auto wrap = [recursive, why](const Value& target) {
      return py::make_builtin("torch.compiler.disable.<wrapped>", [target, recursive, why](py::VM& vm, const py::CallArgs& args) -> Value {
        if (vm.tracer) {
          py::BreakInfo info;
          info.reason = "Skip calling `torch.compiler.disable()`d function";
          info.explanation = "  Explanation: Skip calling function `" + callable_name(vm, target) +
                             "` since it was wrapped with `torch.compiler.disable` (reason: " + why + ")\n"
                             "  Hint: Remove the `torch.compiler.disable` call\n";
          vm.tracer->graph_break(vm, info);
        }
        State& st = state_of(vm);
        if (recursive || !target.is(ObjKind::Function)) {
          CaptureOff off(st);
          return vm.call(target, args);
        }
        const py::Code* saved = st.plain_frame;
        st.plain_frame = target.as<py::Function>()->code.get();
        struct Restore {
          State& st;
          const py::Code* saved;
          ~Restore() { st.plain_frame = saved; }
        } restore{st, saved};
        return vm.call(target, args);
      });
    };
    if (!fn.is_none()) return wrap(fn);
    return py::make_builtin("torch.compiler.disable.<decorator>", [wrap](py::VM&, const py::CallArgs& b) -> Value {
      if (b.npos != 1) throw py::PyError("TypeError", "disable() decorator takes the function to disable");
      return wrap(b[0]);
    });
  });
  hook("torch._dynamo.list_backends", [](py::VM&, const py::CallArgs&) {
    return py::list_value({py::str_value("inductor"), py::str_value("kiln")});
  });
  hook("torch._dynamo.explain", [](py::VM&, const py::CallArgs& a) {
    if (a.npos != 1) throw py::PyError("TypeError", "explain() takes the function to explain");
    Value target = a[0];
    return py::make_builtin("torch._dynamo.explain.<runner>", [target](py::VM& vm, const py::CallArgs& args) {
      // explain starts from empty caches, as PyTorch's calls torch._dynamo.reset() first.
      State& st = state_of(vm);
      st.reset_caches();
      auto c = std::make_shared<Callable>();
      c->target = target;
      c->name = callable_name(vm, target);
      c->internal = true;
      Value compiled = wrap_compiled(vm, c);
      vm.call(compiled, args);
      // As PyTorch's explain ends with torch._dynamo.reset(): its cache entries
      // (and the inputs they hold) are dropped.
      st.reset_caches();
      auto data = std::make_shared<ExplainData>();
      data->report = c->report;
      data->guards = std::move(c->out_guards);
      data->compiles = std::move(c->timings);
      auto cls = py::make<py::Class>("ExplainOutput", py::Ref<py::Class>());
      // Printed when asked: a tensor guard's weakref is "dead" once the program dropped the tensor.
      cls->dict->set(py::str_value("__str__"), py::make_builtin("ExplainOutput.__str__", [data](py::VM&, const py::CallArgs&) {
        return py::str_value(explain_text(*data));
      }));
      auto out = py::make<py::Instance>(cls);
      out->dict->set(py::str_value("graph_count"), Value(int64_t(c->report.graphs.size())));
      out->dict->set(py::str_value("graph_break_count"), Value(int64_t(c->report.graph_break_count())));
      out->dict->set(py::str_value("op_count"), Value(int64_t(c->report.op_count())));
      // break_reasons: one GraphCompileReason per break, with the reason text and
      // the user frames (FrameSummary-like: filename, lineno, name, line).
      auto reason_cls = py::make<py::Class>("GraphCompileReason", py::Ref<py::Class>());
      reason_cls->module = "torch._dynamo.output_graph";
      auto frame_cls = py::make<py::Class>("FrameSummary", py::Ref<py::Class>());
      frame_cls->module = "traceback";
      py::ValueVec reasons;
      for (const BreakRecord& b : c->report.breaks) {
        auto r = py::make<py::Instance>(reason_cls);
        std::string text = b.reason;
        if (!b.explanation.empty()) text += "\n" + b.explanation;
        r->dict->set(py::str_value("reason"), py::str_value(text));
        py::ValueVec frames;
        for (const auto& f : b.stack) {
          auto fr = py::make<py::Instance>(frame_cls);
          fr->dict->set(py::str_value("filename"), py::str_value(f.file));
          fr->dict->set(py::str_value("lineno"), Value(int64_t(f.line)));
          fr->dict->set(py::str_value("name"), py::str_value(f.function));
          fr->dict->set(py::str_value("line"), py::str_value(f.code));
          frames.push_back(Value(fr));
        }
        r->dict->set(py::str_value("user_stack"), py::list_value(std::move(frames)));
        r->dict->set(py::str_value("graph_break"), Value(true));
        reasons.push_back(Value(r));
      }
      out->dict->set(py::str_value("break_reasons"), py::list_value(std::move(reasons)));
      return Value(out);
    });
  });
}

std::vector<std::pair<std::string, const RegionResult*>> compiled_regions(py::VM& vm) {
  std::vector<std::pair<std::string, const RegionResult*>> out;
  // Entries a reset retired come first: they were compiled before the live ones.
  const State& st = state_of(vm);
  for (const CacheEntry& e : st.retired) out.emplace_back(e.compile_id, &e.region);
  const size_t retired = out.size();
  for (const auto& [key, info] : st.frames)
    for (const CacheEntry& e : info.entries) out.emplace_back(e.compile_id, &e.region);
  std::stable_sort(out.begin() + ptrdiff_t(retired), out.end(),
                   [](const auto& a, const auto& b) { return compile_order(a.first) < compile_order(b.first); });
  return out;
}

std::vector<CallableReport> capture_reports(py::VM& vm) {
  std::vector<const Callable*> called;
  for (const auto& c : state_of(vm).callables)
    if (c->first_call >= 0 && !c->internal) called.push_back(c.get());
  std::sort(called.begin(), called.end(), [](const Callable* a, const Callable* b) { return a->first_call < b->first_call; });
  std::vector<CallableReport> out;
  for (const Callable* c : called) {
    CallableReport r = c->report;
    r.name = c->name;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace kiln::capture
