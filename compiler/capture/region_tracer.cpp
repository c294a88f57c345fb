#include "compiler/capture/region_tracer.h"

#include "compiler/capture/fx_namespace.h"
#include "core/python/torch_api.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>

#include "core/python/autograd.h"
#include "core/python/torch_bridge.h"
#include "core/python/torch_convert.h"
#include "core/python/vm.h"

namespace kiln::capture {

using py::ObjKind;
using py::Op;
using py::Value;
using py::Ref;

namespace {

struct FakeInfo : py::FakeTensorInfo {
  NodeId node = kNoNode;    // internal id (see RegionTracer::ids)
  NodeId parent = kNoNode;  // element `index` of a multi-output node, getitem made on first use
  int index = 0;
  const void* owner = nullptr;  // the tracer whose ids these are (a cond branch has its own)
};

struct ShadowEntry {
  SourcePtr src;
  SourcePtr iter_base = nullptr;
  int64_t iter_pos = 0;
  bool dynamic_scalar = false;  // an int/float input the graph takes as a value, not a guarded constant
};

ShadowEntry shadow(SourcePtr src) {
  ShadowEntry e;
  e.src = std::move(src);
  return e;
}

struct TracedFrame {
  py::Frame* frame = nullptr;
  std::vector<ShadowEntry> stack;
  std::vector<SourcePtr> locals;
  std::vector<SourcePtr> cells;  // Frame::cells: cellvars then freevars
  bool user_code = true;  // false for Kiln's own torch.nn prelude
  // A generator expression's ".0" (local 0): the iterator its maker's GetIter
  // made, with that GetIter's shadow, so its elements keep their sources.
  bool has_arg0 = false;
  ShadowEntry arg0;
};

const std::string& cell_name(const py::Code& code, size_t slot) {
  return slot < code.cellvars.size() ? code.cellvars[slot] : code.freevars[slot - code.cellvars.size()];
}

// The source of `obj.name`. A module's children, parameters and buffers live in
// its _modules/_parameters/_buffers dicts (nn.Module.__getattr__ finds them), so
// their sources go through those dicts, as Dynamo names them
// (L['self']._modules['lin']._parameters['weight']), and a guard can read them
// without running __getattr__.
SourcePtr attr_source(const Value& obj, const SourcePtr& base, const std::string& name) {
  if (obj.is(ObjKind::Instance)) {
    const py::Dict& d = *obj.as<py::Instance>()->dict;
    if (!d.find_str(name))
      for (const char* store : {"_modules", "_parameters", "_buffers"}) {
        const Value* dict = d.find_str(store);
        if (dict && dict->is(ObjKind::Dict) && dict->as<py::Dict>()->find_str(name))
          return Source::item(Source::attr(base, store), py::str_value(name));
      }
  }
  return Source::attr(base, name);
}

// What TENSOR_MATCH already guards (x.dtype, x.ndim, ...): Dynamo reads it off
// the tensor's fake, adding no guard of its own. x.shape keeps its source: a
// dynamic size read through it becomes the graph's symbol.
bool is_tensor_metadata(const Value& obj, const std::string& name) {
  static const std::set<std::string, std::less<>> names = {
      "dtype", "device", "ndim", "requires_grad", "is_leaf", "layout", "is_cuda", "is_cpu",
      "is_meta", "is_sparse", "is_quantized", "itemsize", "nbytes"};
  return obj.is(ObjKind::Tensor) && names.count(name);
}

bool is_library(const py::Code* code) { return code->filename.starts_with("torch/"); }

bool is_scalar_constant(const Value& v) {
  return v.is_none() || v.is_bool() || v.is_int() || v.is_float() || v.is(ObjKind::Str);
}

// Values popped by an instruction (the VM's stack effect, see code.h).
size_t stack_pops(const py::Instr& in) {
  switch (in.op) {
    case Op::PopTop: case Op::StoreFast: case Op::StoreDeref: case Op::StoreGlobal: case Op::StoreName:
    case Op::LoadAttr: case Op::UnaryOp: case Op::PopJumpIfFalse: case Op::PopJumpIfTrue: case Op::GetIter:
    case Op::ListAppend: case Op::ListExtend: case Op::ListToTuple: case Op::DictUpdate: case Op::UnpackSequence:
    case Op::UnpackEx: case Op::ReturnValue: case Op::WithEnter: case Op::WithExit: case Op::CheckExcMatch:
    case Op::PopExcept: case Op::Raise: case Op::Reraise: case Op::DeleteAttr:
      return 1;
    case Op::StoreAttr: case Op::BinarySubscr: case Op::DeleteSubscr: case Op::BinaryOp: case Op::InplaceOp:
    case Op::CompareOp: case Op::MapAdd: case Op::WithExceptExit:
      return 2;
    case Op::StoreSubscr: return 3;
    case Op::BuildSlice: case Op::BuildTuple: case Op::BuildList: case Op::BuildString: return size_t(in.arg);
    case Op::BuildMap: return size_t(2 * in.arg);
    case Op::FormatValue: return (in.arg & 4) ? 2 : 1;
    case Op::Call: return size_t(in.arg) + 1;
    case Op::CallKw: return size_t(in.arg) + 2;
    case Op::CallEx: return (in.arg & 1) ? 3 : 2;
    case Op::MakeFunction: return 1 + ((in.arg & 1) ? 1 : 0) + ((in.arg & 2) ? 1 : 0) + ((in.arg & 4) ? 1 : 0) +
                                   ((in.arg & 8) ? 1 : 0);
    case Op::BuildClass: return size_t(in.arg & 0xff) + 2 + ((in.arg & 0x100) ? 1 : 0);
    default: return 0;
  }
}

std::string last_part(const std::string& dotted) {
  size_t dot = dotted.rfind('.');
  return dot == std::string::npos ? dotted : dotted.substr(dot + 1);
}

}  // namespace

// The elements of a torch op's multi-output result: a tuple, a list, or a
// torch.return_types named tuple (an instance whose fields are its dict, in order).
py::ValueVec result_items(const Value& v) {
  if (v.is(ObjKind::Tuple)) return v.as<py::Tuple>()->items;
  if (v.is(ObjKind::List)) return v.as<py::List>()->items;
  py::ValueVec out;
  if (v.is(ObjKind::Instance) && v.as<py::Instance>()->cls->module == "torch.return_types")
    v.as<py::Instance>()->dict->for_each([&](const Value&, const Value& x) { out.push_back(x); });
  return out;
}

class RegionTracer : public py::Tracer {
 public:
  RegionTracer(py::VM& vm, const TraceSettings& settings, RegionResult& out)
      : vm_(vm), settings_(settings), out_(out), epoch_(py::next_object_serial()) {}

  // ---- py::Tracer ----
  Value record(py::VM& vm, const py::TorchCall& call, const std::function<Value(const py::CallArgs&)>& run_meta) override;
  bool is_traced_tensor(const Value& v) const override { return v.is(ObjKind::Tensor); }
  Value inspect_tensor(py::VM& vm, const Value& v) override;
  Value inspect_sizes(py::VM& vm, const Value& v) override;
  [[noreturn]] void graph_break(py::VM&, py::BreakInfo info) override { throw py::GraphBreakSignal{std::move(info)}; }
  void note_mutation(py::VM&, const Value& obj) override {
    // A function kept whole in the graph runs again at each replay: one that
    // changes outside state is inlined instead.
    if (in_graph_body_ && obj.is_obj() && obj.obj()->serial < epoch_) throw py::GraphBreakSignal{in_graph_refused()};
    // A Function's forward that changes outside state would change it once in
    // the trace and again in each replayed apply: it runs eagerly instead.
    if (is_subgraph_ && function_body_ && obj.is_obj() && obj.obj()->serial < epoch_)
      throw py::GraphBreakSignal{function_body_break("its forward changes a " + py::type_name(obj) + " that existed before it")};
    // Dynamo allows no side effects in a cond branch: only one branch runs, so
    // a change the trace made could not be replayed for the other.
    if (is_subgraph_ && obj.is_obj() && obj.obj()->serial < epoch_)
      throw py::PyError("torch._dynamo.exc.UncapturedHigherOrderOpError",
                        "Cond doesn't work unless it is captured completely with torch.compile. A branch changes a " +
                            py::type_name(obj) + " that existed before it" + branch_where());
    save_for_undo(obj);
    if (!obj.is_obj() || obj.obj()->serial >= epoch_ || note_side_effect(obj)) return;
    if (out_.reusable) {
      out_.reusable = false;
      out_.not_reusable_why = "the region changes a " + py::type_name(obj) + " that existed before it";
    }
  }

  // The trace runs the real frame, so Python state changes as it goes. A break
  // inside an inlined call undoes the call (it runs again eagerly after the
  // break): what it changed on objects (self.calls += 1, a list it appended
  // to) is put back first, or the program would see the change twice.
  void begin_root_step() {
    namer_mark_ = namer_.mark();
    deferred_mark_ = deferred_.size();
    reads_mark_ = out_.global_reads.size();
    renames_.clear();
    undo_.clear();
    undo_seen_.clear();
  }
  void undo_root_step() {
    for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) {
      if (it->dict) {
        it->dict->entries = std::move(it->entries);
        it->dict->index = std::move(it->index);
      } else if (it->list) {
        it->list->items = std::move(it->items);
      } else if (it->cell) {
        it->cell->value = std::move(it->cell_value);
        it->cell->bound = it->cell_bound;
      }
    }
    undo_.clear();
    undo_seen_.clear();
  }

  // ---- torch.cond (torch.ops.higher_order.cond) ----
  // Traces both branches as subgraphs taking the operands, and records one
  // cond node whose elements are the branch outputs.
  Value trace_cond(const Value& pred, const Value& true_fn, const Value& false_fn, const py::ValueVec& operands);
  // ---- torch.autocast blocks ----
  // Records _enter_autocast(device_type, dtype, enabled, cache_enabled) (the
  // constructor's arguments as given) or _exit_autocast(<its enter node>).
  void autocast_marker(bool enter, const Value& ctx);
  // Dynamo closes the autocast blocks still open at a graph break with
  // _exit_autocast nodes and its resume function enters them again: a region
  // that starts inside such blocks (their __exit__ methods on the frame's
  // stack) opens with their enter nodes, one that breaks inside them ends
  // with their exit nodes.
  void enter_open_autocast_blocks(const py::Frame& frame);
  void exit_open_autocast_blocks(const py::Frame& frame);
  // ---- torch.autograd.Function.apply (torch.ops.higher_order.autograd_function_apply) ----
  // `forward_helper(cls, args)` runs the class's forward (and setup_context)
  // with a fresh ctx; it is traced as the node's forward subgraph.
  Value trace_function_apply(const Value& cls, const Value& args, const Value& forward_helper);

  // ---- Python functions Dynamo keeps whole (one call_function node) ----
  // A call of a function marked with __kiln_graph_target__ (torch.lstm_cell,
  // F.multi_head_attention_forward, einops.rearrange, ...): its body is traced
  // into a scratch subgraph only to learn its outputs' metadata and the guards
  // it takes, and the region records one node that runs the function again.
  // nullopt when the body cannot be kept whole (it breaks, reads a tensor that
  // is not an argument, changes outside state, returns something other than
  // tensors): the call is then inlined as any other.
  std::optional<Value> trace_in_graph_call(py::Frame& frame, const std::string& target);
  static py::BreakInfo in_graph_refused() {
    py::BreakInfo info;
    info.reason = "a function kept whole in the graph cannot be traced on its own";
    return info;
  }
  bool in_graph_body_ = false;                 // traces such a function's body
  const py::Function* in_graph_root_ = nullptr;  // that function: its own frame is inlined, not kept whole again

  // ---- generator expressions ----
  // A generator expression made inside the region is inlined: its frame is
  // stepped like an inlined call's each time it is resumed, with a shadow kept
  // between resumes. A generator outlives the instruction that made it, so a
  // generator expression of the root frame opens a transaction at the
  // LoadConst of its code: the root steps up to the one that drops it from the
  // stack (the consumer's call) are undone together on a break, which then
  // retraces from that LoadConst with the generator made eagerly (the old
  // break at its creation). A generator still referenced when its transaction
  // (or, made inside an inlined call, its root step) ends has escaped: resuming
  // it later breaks the graph before it runs.
  bool generator_made(py::VM&, const Value& gen, py::Frame& frame) override;
  bool traces_generator(const py::Frame& frame) const override;
  Value resume_generator(py::VM&, py::Frame& frame) override;
  void note_iteration(py::VM&, const Value& iterator) override;
  bool in_transaction() const { return txn_.has_value(); }
  void end_transaction() {
    txn_.reset();
    settle_generators();
  }
  // Opens a transaction when the root frame is at a generator expression's LoadConst.
  void maybe_open_transaction(TracedFrame& root, size_t nops, size_t nphs, bool grad_before);
  // After a root step: closes the transaction once its generator left the stack, and
  // settles the generators made in the step or transaction.
  void after_root_step(TracedFrame& root);
  // A break inside the transaction: puts the region back as it was at its LoadConst.
  void rewind_transaction(TracedFrame& root);
  // Generators made in the step or transaction just ended: dropped when nothing else holds them, else escaped.
  void settle_generators();

  // ---- stepping ----
  bool step(TracedFrame& tf, Value& result);
  void init_inlined(TracedFrame& tf, py::Frame& frame);
  Value run_inlined(py::Frame& frame);
  Value run_traced(TracedFrame& tf);
  [[noreturn]] void refuse_rnn(const py::Frame& frame);
  [[noreturn]] void refuse_sparse();
  bool unresumable() const { return unresumable_; }
  bool root_checkpoint() const { return root_checkpoint_; }
  void init_root(TracedFrame& tf);
  void push_root(TracedFrame* tf) { frames_.push_back(tf); }
  void finalize(py::Frame& frame, const Value* returned);
  // Dynamo removes the getitem nodes nothing reads before it compiles a graph
  // (remove_unused_graphargs' small dead-code pass): `v, _ = torch.topk(...)`
  // keeps only v's, and explain does not count the other. Drops them from
  // ops_, renumbering the ops after them and `outs`; returns how many of the
  // first `count` ops went.
  size_t drop_unused_getitems(std::vector<NodeId>& outs, size_t count);
  size_t op_count() const { return ops_.size(); }
  size_t placeholder_count() const { return phs_.size(); }
  void truncate(size_t ops, size_t phs);
  // The user stack where the region's break happened, taken before inlined frames unwind.
  void note_break_stack() {
    if (break_stack_.empty()) break_stack_ = user_frames();
  }
  const std::vector<StackFrame>& break_stack() const { return break_stack_; }
  // A Python exception raised while tracing inside a try block breaks the
  // graph there: the instruction then runs eagerly and its handler runs as
  // CPython would run it.
  bool in_try_block() const {
    for (const TracedFrame* tf : frames_)
      if (tf->frame->code->handler_at(tf->frame->pc)) return true;
    return false;
  }
  static py::GraphBreakSignal exception_break(const py::PyError& e) {
    py::BreakInfo info;
    info.reason = "exception raised inside a try block: " + e.type();
    info.explanation = "  Explanation: Kiln's capture does not trace exception handlers; the raising instruction runs eagerly.\n";
    return py::GraphBreakSignal{info};
  }

 private:
  struct UndoEntry {
    Value keep;  // holds the object while its old state waits here
    py::Dict* dict = nullptr;
    std::vector<py::Dict::Entry> entries;
    std::unordered_map<Value, size_t, py::ValueHash, py::ValueKeyEq> index;
    py::List* list = nullptr;
    py::ValueVec items;
    py::Cell* cell = nullptr;
    Value cell_value;
    bool cell_bound = false;
  };
  std::vector<UndoEntry> undo_;
  std::unordered_set<const py::Object*> undo_seen_;
  // Instances, dicts and lists from before the region that it changed, with
  // their state when it first changed them; finalize turns the difference into
  // side effects a cache hit replays. Undone changes leave no difference.
  struct Mutated {
    Value obj;  // the instance, dict or list noted
    py::Dict* dict = nullptr;
    py::List* list = nullptr;
    std::vector<py::Dict::Entry> entries;
    py::ValueVec items;
  };
  std::vector<Mutated> mutated_;
  std::unordered_map<const py::Object*, size_t> mutated_at_;  // by the dict or list changed
  bool note_side_effect(const Value& obj) {
    py::Dict* dict = obj.is(ObjKind::Instance) ? obj.as<py::Instance>()->dict.get()
                     : obj.is(ObjKind::Dict)   ? obj.as<py::Dict>()
                                               : nullptr;
    py::List* list = obj.is(ObjKind::List) ? obj.as<py::List>() : nullptr;
    if (!dict && !list) return false;
    auto [it, fresh] = mutated_at_.emplace(dict ? static_cast<const py::Object*>(dict) : list, mutated_.size());
    if (!fresh) {
      // The instance names its attribute dict better than the dict does (its source).
      if (obj.is(ObjKind::Instance)) mutated_[it->second].obj = obj;
      return true;
    }
    Mutated m;
    m.obj = obj;
    m.dict = dict;
    m.list = list;
    if (dict) m.entries = dict->entries;
    else m.items = list->items;
    mutated_.push_back(std::move(m));
    return true;
  }
  // Where a changed object is found again on a cache hit: its source, or the
  // instance whose attribute dict it is or holds (a module's _buffers).
  SourcePtr side_effect_target(const Mutated& m, Value& target) const;
  void make_side_effects(const std::vector<py::TensorObj*>& outputs);
  void save_for_undo(const Value& obj) {
    if (!obj.is_obj() || !undo_seen_.insert(obj.obj()).second) return;
    UndoEntry u;
    u.keep = obj;
    if (obj.is(ObjKind::Instance)) u.dict = obj.as<py::Instance>()->dict.get();
    else if (obj.is(ObjKind::Dict)) u.dict = obj.as<py::Dict>();
    else if (obj.is(ObjKind::Class)) u.dict = obj.as<py::Class>()->dict.get();
    else if (obj.is(ObjKind::Module)) u.dict = obj.as<py::Module>()->dict.get();
    else if (obj.is(ObjKind::Function) && obj.as<py::Function>()->attrs) u.dict = obj.as<py::Function>()->attrs.get();
    else if (obj.is(ObjKind::List)) u.list = obj.as<py::List>();
    else if (obj.is(ObjKind::Cell)) u.cell = obj.as<py::Cell>();
    else return;
    if (u.dict) {
      u.entries = u.dict->entries;
      u.index = u.dict->index;
    } else if (u.list) {
      u.items = u.list->items;
    } else {
      u.cell_value = u.cell->value;
      u.cell_bound = u.cell->bound;
    }
    undo_.push_back(std::move(u));
  }

  struct Placeholder {
    SourcePtr source;
    Node node;
    Value real;
    Ref<py::TensorObj> fake;
  };
  struct OpNode {
    Node node;
    GraphStep step;
    bool renamed = false;
    // Rewrites every node id the op refers to (its args and kwargs, its
    // step's templates and the step's own node) through `map`.
    void renumber(const std::function<NodeId(NodeId)>& map);
  };
  // One traced branch: its region (graph and steps) and its outputs' metadata.
  struct Branch {
    std::shared_ptr<RegionResult> region;
    Value structure;                  // what the branch returned: a tensor, or a tuple/list of them
    std::vector<py::TensorObj*> outs;  // the branch's output fakes, flattened
  };
  // `call` runs the branch on the subgraph's placeholders (fakes of the operands).
  // With `in_graph_root` it traces that function's body for trace_in_graph_call:
  // a break inside comes out as it is, and the caller reads the outputs.
  Branch trace_branch(const std::function<Value(const py::ValueVec&)>& call, const char* which,
                      const std::vector<NodeId>& operand_ids, bool function_body = false,
                      const py::Function* in_graph_root = nullptr);
  py::ValueVec push_with_outputs(OpNode op, const std::vector<py::TensorObj*>& like,
                                 const std::function<bool(size_t)>& requires_grad);
  NodeId push_subgraph_attr(const std::string& name, const Graph* graph);
  static py::BreakInfo function_body_break(const std::string& why) {
    py::BreakInfo info;
    info.reason = "Unsupported call: torch.autograd.Function.apply";
    info.explanation = "  Explanation: Kiln cannot trace this Function's forward into a subgraph (" + why +
                       "); apply runs eagerly.\n";
    return info;
  }
  Graph build_subgraph(const std::vector<NodeId>& outs);
  void place_ops(Graph& g, const std::function<NodeId(NodeId)>& remap, const std::vector<NodeId>& outs);
  std::string branch_where() const;  // " (FILE:LINE)" of the innermost user frame, or ""
  const Val& node_val(NodeId id) const { return id < -1 ? phs_[size_t(-id - 2)].node.meta.val : ops_[size_t(id)].node.meta.val; }
  const std::string& node_name(NodeId id) const { return id < -1 ? phs_[size_t(-id - 2)].node.name : ops_[size_t(id)].node.name; }
  bool defer_logging_call(TracedFrame& tf, const py::Instr& in);

  static NodeId ph_id(size_t p) { return -NodeId(p) - 2; }
  NodeId resolve(py::TensorObj* t);
  NodeId lift(py::TensorObj* t);
  SourcePtr source_of(const Value& v) const;
  void on_pushed(TracedFrame& tf, size_t slot);
  void specialize_all_dynamic();
  Placeholder* shape_read(const SourcePtr& src, size_t& dim);
  void specialize_scalar(const Value& v, const SourcePtr& src);
  void name_elements(const Value& v, const SourcePtr& src, int depth);
  void add_constant_guard(const Value& v, const SourcePtr& src);
  void stamp_user(Guard& g) const;  // where the guarded value was read
  // Adds `g` unless the same guard is there; stamped with the user line reading it unless `stamp` is false.
  void add_guard(Guard g, bool stamp = true) {
    if (!guarded_.insert(g.text()).second) return;
    if (stamp) stamp_user(g);
    out_.guards.push_back(std::move(g));
  }
  // Adds a type guard: `v`'s class at `src`.
  void add_type_guard(const Value& v, const SourcePtr& src, bool stamp = true) {
    Guard g;
    g.kind = Guard::Kind::TypeMatch;
    g.source = src;
    g.expected = Value(vm_.type_of(v));
    add_guard(std::move(g), stamp);
  }
  void add_tensor_guard(py::TensorObj* t, const SourcePtr& src, bool specialize);
  bool to_arg(const Value& v, Arg& arg, ArgTemplate& tmpl);
  Val val_of(const Value& v, const std::vector<bool>* dynamic = nullptr) const;
  std::vector<StackFrame> user_stack() const;
  // The module path the innermost module frame runs in ("layer1.0.conv1"), as
  // Dynamo's nn_module_stack ends; "" outside submodules.
  std::string module_scope() const;
  std::vector<StackFrame> user_frames() const;  // outermost first
  void rename_on_store(TracedFrame& tf, const Value& v, const std::string& name);
  StateTemplate make_template(const Value& v, const SourcePtr& src, const std::vector<py::TensorObj*>& outputs);
  Ref<py::TensorObj> make_fake(Tensor meta, NodeId node);
  Ref<py::TensorObj> make_item_fake(const py::TensorObj* like, NodeId parent, int index, bool requires_grad);
  bool is_dynamic(const SourcePtr& src, size_t dim, int64_t size) const;
  bool is_dynamic_scalar(const Value& v, const SourcePtr& src);
  void consume_dynamic_scalars(TracedFrame& tf, const py::Instr& in);
  NodeId lift_scalar(const Value& v, const SourcePtr& src);

  py::VM& vm_;
  const TraceSettings& settings_;
  RegionResult& out_;
  uint64_t epoch_;
  FxNamespace namer_;
  size_t namer_mark_ = 0;  // names made before the root step in progress
  size_t reads_mark_ = 0;  // global reads before the root step in progress
  void note_global_read(const Value& v, const SourcePtr& src);
  std::vector<std::pair<size_t, std::string>> renames_;  // op, name before: renames in the root step
  std::vector<Placeholder> phs_;
  std::vector<OpNode> ops_;
  std::vector<Ref<py::TensorObj>> fakes_;
  std::unordered_map<const py::Object*, SourcePtr> sources_;   // objects seen with a source
  // Keeps every object in sources_ alive for the region: a freed object's
  // address reused by a new one would otherwise inherit its source.
  std::vector<py::Ref<py::Object>> pinned_;
  std::unordered_set<const py::Object*> untyped_;  // modules named through containers, type guard pending
  // Dicts with a source whose length is not guarded yet: d[k], d.get(k) and
  // `k in d` need only their key; anything else (iteration, len) guards the length.
  std::unordered_map<const py::Object*, SourcePtr> dict_length_pending_;
  void consume_dicts(TracedFrame& tf, const py::Instr& in, SourcePtr& get_result_source);
  SourcePtr getattr_source(const TracedFrame& tf, const py::Instr& in) const;
  void add_dict_guard(const SourcePtr& src, Guard::Kind kind, const Value& dict, const Value& key);
  void remember_source(const Value& v, const SourcePtr& src) {
    sources_[v.obj()] = src;
    pinned_.push_back(py::Ref<py::Object>(v.obj()));
  }
  std::unordered_map<const py::TensorObj*, size_t> lifted_;    // real tensor -> placeholder
  std::set<std::string> guarded_;                              // guard dedupe by text
  std::vector<TracedFrame*> frames_;                           // root first
  bool unresumable_ = false;     // the region ends at an RNN module call or a sparse tensor (refuse_*)
  bool root_checkpoint_ = false;  // the root frame reached an empty stack with more than one op traced
  std::vector<StackFrame> break_stack_;
  mutable int next_symbol_ = 0;  // s0, s1, ... for dynamic sizes, one sequence per region
  // Dynamic scalars the instruction being stepped hands to a tensor op: record()
  // makes the matching argument a graph input.
  struct PendingScalar {
    Value value;
    SourcePtr source;
  };
  std::vector<PendingScalar> pending_scalars_;
  std::map<std::string, size_t> scalar_inputs_;  // source text -> placeholder
  bool is_subgraph_ = false;  // traces a cond branch: its placeholders are the operands
  // Traces an autograd Function's forward: what the subgraph cannot hold
  // breaks the enclosing graph at the apply, which then runs eagerly.
  bool function_body_ = false;
  int next_cond_ = 0;         // cond_true_N / cond_false_N
  int next_function_ = 0;     // fwd_body_N / bwd_body_N
  // The autocast objects entered in this region, with their enter nodes.
  std::vector<std::pair<const py::Object*, NodeId>> autocast_enters_;
  // Subgraphs installed by cond nodes, each with the op index of its get_attr node.
  std::vector<std::pair<size_t, Subgraph>> subgraphs_;
  struct Deferred {
    Value fn;
    py::ValueVec args;
  };
  std::vector<Deferred> deferred_;  // reorderable logging calls, run after the graph
  size_t deferred_mark_ = 0;        // deferred calls before the root step in progress

  struct TracedGenerator {
    Value gen;  // holds the generator while the region runs
    py::Frame* frame = nullptr;
    std::unique_ptr<TracedFrame> tf;
    bool escaped = false;
  };
  std::vector<std::unique_ptr<TracedGenerator>> generators_;
  TracedGenerator* find_generator(const py::Frame& frame) const {
    for (const auto& g : generators_)
      if (g->frame == &frame) return g.get();
    return nullptr;
  }
  // The region's state at a transaction's LoadConst.
  struct Transaction {
    int pc = 0;
    size_t depth = 0;  // root stack size below the function (its closure tuple, the code)
    uint64_t serial = 0;  // objects made from here on are the transaction's
    py::ValueVec stack, locals;
    std::vector<std::pair<Value, bool>> cells;
    TracedFrame shadow;
    size_t nops = 0, nphs = 0, nguards = 0, ngenerators = 0;
    bool grad_before = true, reusable = true;
    torchapi::AutocastState autocast_before;
    std::string not_reusable_why;
    std::set<std::string> guarded;
    std::unordered_set<const py::Object*> untyped;
    std::unordered_map<const py::Object*, SourcePtr> dict_length_pending;
    int next_symbol = 0, next_cond = 0, next_function = 0;
  };
  std::optional<Transaction> txn_;
  std::set<int> eager_genexps_;  // root pcs whose generator expression a rewound transaction made eager
};

namespace {
thread_local RegionTracer* active_tracer = nullptr;
}

// ---- sources and guards ----

SourcePtr RegionTracer::source_of(const Value& v) const {
  // Strings are values, not identities: the same interned object turns up everywhere.
  if (!v.is_obj() || is_scalar_constant(v)) return nullptr;
  auto it = sources_.find(v.obj());
  return it == sources_.end() ? nullptr : it->second;
}

void RegionTracer::add_constant_guard(const Value& v, const SourcePtr& src) {
  Guard g;
  g.kind = Guard::Kind::EqualsMatch;
  g.source = src;
  g.expected = v;
  add_guard(std::move(g));
}

void RegionTracer::stamp_user(Guard& g) const {
  if (frames_.empty()) return;
  const py::Frame& f = *frames_.back()->frame;
  const py::Instr& in = f.code->code[size_t(std::min<int>(f.pc, int(f.code->code.size()) - 1))];
  g.user_file = f.code->filename;
  g.user_line = in.line;
  g.user_function = f.code->name;
  g.user_code = py::source_line(*f.code, in.line);
  g.user_stack = user_frames();
}

bool RegionTracer::is_dynamic(const SourcePtr& src, size_t dim, int64_t size) const {
  if (size < 2) return false;
  if (settings_.all_dynamic) return true;
  std::string text = src->str();
  for (const auto& [s, d] : settings_.dynamic_dims)
    if (s == text && size_t(d) == dim) return true;
  return false;
}

bool RegionTracer::is_dynamic_scalar(const Value& v, const SourcePtr& src) {
  if (!src || v.is_bool() || !(v.is_int() || v.is_float())) return false;
  size_t dim = 0;
  if (Placeholder* p = shape_read(src, dim)) {
    const Val& val = p->node.meta.val;
    return val.is_tensor() && dim < val.tensor.sizes.size() && val.tensor.sizes[dim].is_symbolic();
  }
  const std::string text = src->str();
  for (const std::string& s : settings_.dynamic_scalars)
    if (s == text) return true;
  return false;
}

// What the instruction about to run does with dynamic scalars: a tensor op
// (tensor * k, k + tensor) takes one as a graph input; anything else (Python
// arithmetic, range(k), branching) specializes it with a guard, as the graph
// cannot follow Python-level uses.
void RegionTracer::consume_dynamic_scalars(TracedFrame& tf, const py::Instr& in) {
  pending_scalars_.clear();
  switch (in.op) {
    // Moving a value around keeps it dynamic: its source goes with it.
    case Op::StoreFast: case Op::StoreDeref: case Op::PopTop: case Op::DupTop: case Op::DupTopTwo: case Op::RotTwo:
    case Op::RotThree: case Op::RotFour: case Op::ReturnValue:
      return;
    default: break;
  }
  const size_t pops = std::min(stack_pops(in), tf.stack.size());
  const py::Frame& f = *tf.frame;
  const bool binary = in.op == Op::BinaryOp || in.op == Op::InplaceOp || in.op == Op::CompareOp;
  for (size_t k = 0; k < pops; ++k) {
    size_t slot = tf.stack.size() - 1 - k;
    ShadowEntry& e = tf.stack[slot];
    // x.shape taken apart (x.shape[0], a, b = x.shape, for s in x.shape) keeps its
    // sizes followable; handed whole to anything else, it pins the tensor's sizes.
    if (e.src && e.src->kind == Source::Kind::Attr && e.src->name == "shape" && f.stack[slot].is(ObjKind::Tuple) &&
        in.op != Op::BinarySubscr && in.op != Op::UnpackSequence && in.op != Op::GetIter) {
      size_t unused = 0;
      if (Placeholder* p = shape_read(Source::item(e.src, Value(int64_t(0))), unused)) {
        add_tensor_guard(p->real.as<py::TensorObj>(), p->source, true);
        p->node.meta.val = val_of(p->real);
      }
      continue;
    }
    if (!e.dynamic_scalar) continue;
    const Value& v = f.stack[slot];
    const Value& other = f.stack[k == 0 ? slot - 1 : slot + 1];
    if (binary && pops == 2 && other.is(ObjKind::Tensor)) {
      pending_scalars_.push_back({v, e.src});
      continue;
    }
    e.dynamic_scalar = false;
    specialize_scalar(v, e.src);
  }
}

// Python code reads a dynamic value: the graph is only right for this value now.
void RegionTracer::specialize_scalar(const Value& v, const SourcePtr& src) {
  size_t dim = 0;
  if (Placeholder* p = shape_read(src, dim)) {
    add_tensor_guard(p->real.as<py::TensorObj>(), p->source, true);
    p->node.meta.val = val_of(p->real);
    return;
  }
  add_constant_guard(v, src);
  for (Guard& g : out_.guards)
    if (g.kind == Guard::Kind::EqualsMatch && g.source->str() == src->str()) g.from_symbol = true;
}

NodeId RegionTracer::lift_scalar(const Value& v, const SourcePtr& src) {
  auto it = scalar_inputs_.find(src->str());
  if (it != scalar_inputs_.end()) return ph_id(it->second);
  // The graph is only right for values of this type: int * tensor and float * tensor differ.
  add_type_guard(v, src, /*stamp=*/false);
  Placeholder p;
  p.source = src;
  p.real = v;
  p.node.op = OpKind::Placeholder;
  p.node.target = src->graph_name();
  std::string name = p.node.target;
  if (!name.empty()) name[0] = char(tolower(static_cast<unsigned char>(name[0])));
  size_t dim = 0;
  if (Placeholder* t = shape_read(src, dim)) {
    // A tensor's size: Dynamo's graph takes it as the symbol itself (s0: "Sym(s0)").
    std::string sym = t->node.meta.val.tensor.sizes[dim].expr;
    p.node.name = namer_.create_name(sym);
    p.node.target = sym;
    p.node.meta.val = Val::of_sym(sym);
  } else {
    p.node.name = namer_.create_name(name);
    p.node.meta.val = Val::of_sym("s" + std::to_string(next_symbol_++));
  }
  size_t index = phs_.size();
  phs_.push_back(std::move(p));
  scalar_inputs_[src->str()] = index;
  return ph_id(index);
}

void RegionTracer::add_dict_guard(const SourcePtr& src, Guard::Kind kind, const Value& dict, const Value& key) {
  Guard g;
  g.kind = kind;
  g.source = src;
  if (kind == Guard::Kind::LengthCheck) {
    g.length = vm_.len(dict);
    dict_length_pending_.erase(dict.obj());
  } else {
    g.expected = key;
    g.contains = dict.as<py::Dict>()->find(key) != nullptr;
  }
  add_guard(std::move(g));
}

void RegionTracer::consume_dicts(TracedFrame& tf, const py::Instr& in, SourcePtr& get_result_source) {
  if (dict_length_pending_.empty()) return;
  const py::Frame& f = *tf.frame;
  auto pending = [&](const Value& v) -> SourcePtr {
    if (!v.is(ObjKind::Dict)) return nullptr;
    auto it = dict_length_pending_.find(v.obj());
    return it == dict_length_pending_.end() ? nullptr : it->second;
  };
  auto constant_key = [](const Value& k) { return k.is(ObjKind::Str) || k.is_int(); };
  switch (in.op) {
    case Op::StoreFast: case Op::PopTop: case Op::DupTop: case Op::RotTwo: case Op::RotThree: return;
    case Op::LoadAttr:
      if (pending(f.stack.back()) && f.code->names[size_t(in.arg)] == "get") return;
      break;
    case Op::BinarySubscr:
      if (pending(f.stack[f.stack.size() - 2]) && constant_key(f.stack.back())) return;
      break;
    case Op::CompareOp: {
      auto k = py::CompareKind(in.arg);
      const Value& d = f.stack.back();
      if ((k == py::CompareKind::In || k == py::CompareKind::NotIn) && constant_key(f.stack[f.stack.size() - 2])) {
        if (SourcePtr src = pending(d)) {
          add_dict_guard(src, Guard::Kind::DictContains, d, f.stack[f.stack.size() - 2]);
          return;
        }
      }
      break;
    }
    case Op::Call:
      if (in.arg == 1 || in.arg == 2) {
        const Value& callee = f.stack[f.stack.size() - size_t(in.arg) - 1];
        if (callee.is(ObjKind::Builtin) && callee.as<py::Builtin>()->has_self && callee.as<py::Builtin>()->name == "dict.get") {
          const Value& d = callee.as<py::Builtin>()->self;
          const Value& key = f.stack[f.stack.size() - size_t(in.arg)];
          if (SourcePtr src = pending(d); src && constant_key(key)) {
            if (d.as<py::Dict>()->find(key)) get_result_source = Source::item(src, key);
            else add_dict_guard(src, Guard::Kind::DictContains, d, key);
            return;
          }
        }
      }
      break;
    default: break;
  }
  // Any other use of a pending dict depends on all its keys.
  const size_t pops = std::min(stack_pops(in), f.stack.size());
  for (size_t k = 0; k < pops; ++k) {
    const Value& v = f.stack[f.stack.size() - 1 - k];
    if (SourcePtr src = pending(v)) add_dict_guard(src, Guard::Kind::LengthCheck, v, Value());
  }
}

void RegionTracer::add_tensor_guard(py::TensorObj* t, const SourcePtr& src, bool specialize) {
  Guard g;
  g.kind = Guard::Kind::TensorMatch;
  g.source = src;
  g.dtype = t->t.dtype();
  g.sizes = t->t.sizes();
  g.strides = t->t.strides();
  g.requires_grad = t->requires_grad;
  g.device = t->device;
  for (size_t d = 0; d < g.sizes.size(); ++d) g.dynamic.push_back(!specialize && is_dynamic(src, d, g.sizes[d]));
  // A later specializing read replaces the dynamic guard of the same tensor.
  for (Guard& old : out_.guards)
    if (old.kind == Guard::Kind::TensorMatch && old.source->str() == src->str()) {
      if (specialize) old = g;
      return;
    }
  out_.guards.push_back(std::move(g));
}

// Objects inside a container the trace reached get sources too, so tensors
// that come out through iteration, zip, slicing or library code can still be
// lifted and guarded (`L['xs'][2]`).
void RegionTracer::name_elements(const Value& v, const SourcePtr& src, int depth) {
  if (depth > 3) return;
  auto name = [&](const Value& item, const Value& key) {
    // Numbers and strings have no identity to follow through zip or iteration,
    // so they are guarded now: capture may bake them into the graph.
    if (is_scalar_constant(item)) {
      // A tensor's shape is guarded by its TENSOR_MATCH; its sizes are followed one by one.
      if (src->kind == Source::Kind::Attr && src->name == "shape") return;
      add_constant_guard(item, Source::item(src, key));
      return;
    }
    if (!item.is_obj() || sources_.count(item.obj()) || item.obj()->serial >= epoch_) return;
    SourcePtr s = Source::item(src, key);
    remember_source(item, s);
    // A module reached through a container (ModuleList iteration) gets its type
    // guard where it is first used, as when read directly (see on_pushed).
    if (item.is(ObjKind::Instance)) untyped_.insert(item.obj());
    name_elements(item, s, depth + 1);
  };
  if (v.is(ObjKind::List) || v.is(ObjKind::Tuple)) {
    const py::ValueVec& items = v.is(ObjKind::List) ? v.as<py::List>()->items : v.as<py::Tuple>()->items;
    for (size_t i = 0; i < items.size(); ++i) name(items[i], Value(int64_t(i)));
  } else if (v.is(ObjKind::Dict)) {
    v.as<py::Dict>()->for_each([&](const Value& k, const Value& x) {
      if (k.is(ObjKind::Str) || k.is_int()) name(x, k);
    });
  }
}

void RegionTracer::on_pushed(TracedFrame& tf, size_t slot) {
  ShadowEntry& e = tf.stack[slot];
  const Value& v = tf.frame->stack[slot];
  const bool had_source = e.src != nullptr;
  if (!e.src) e.src = source_of(v);
  // Binding a module to a name is not a use; its pending type guard waits for the next read.
  const py::Frame& f = *tf.frame;
  bool just_stored = f.pc < int(f.code->code.size()) && f.code->code[size_t(f.pc)].op == Op::StoreFast;
  if (e.src && v.is(ObjKind::Instance) && !just_stored && untyped_.erase(v.obj())) add_type_guard(v, source_of(v));
  if (!had_source) return;
  if (is_scalar_constant(v)) {
    if (is_dynamic_scalar(v, e.src)) {
      e.dynamic_scalar = true;  // guarded only if something other than a tensor op reads it
      return;
    }
    add_constant_guard(v, e.src);
    return;
  }
  // A tensor the region made (w.T, w.data) is its node, not a source: pinning
  // it, or a method bound to it (w.data.t), would count as a reference kept
  // outside the frame, a spurious graph output.
  if (v.is(ObjKind::Tensor) && v.as<py::TensorObj>()->fake) {
    e.src = nullptr;
    return;
  }
  if (v.is_obj() && !sources_.count(v.obj())) {
    remember_source(v, e.src);
    name_elements(v, e.src, 0);
    if (v.is(ObjKind::Dict)) {
      dict_length_pending_[v.obj()] = e.src;  // see consume_dicts: reading keys one by one guards only those keys
    } else if (v.is(ObjKind::List) || v.is(ObjKind::Tuple)) {
      Guard g;
      g.kind = Guard::Kind::LengthCheck;
      g.source = e.src;
      g.length = vm_.len(v);
      add_guard(std::move(g));
    } else if (v.is(ObjKind::Instance)) {
      add_type_guard(v, e.src);
    }
  }
}

// ---- graph values ----

Ref<py::TensorObj> RegionTracer::make_fake(Tensor meta, NodeId node) {
  auto obj = py::make<py::TensorObj>(std::move(meta));
  auto info = std::make_shared<FakeInfo>();
  info->node = node;
  info->owner = this;
  obj->fake = info;
  fakes_.push_back(obj);
  return obj;
}

NodeId RegionTracer::lift(py::TensorObj* t) {
  auto it = lifted_.find(t);
  if (it != lifted_.end()) return ph_id(it->second);
  if (in_graph_body_) throw py::GraphBreakSignal{in_graph_refused()};
  if (is_subgraph_ && function_body_)
    throw py::GraphBreakSignal{function_body_break("its forward reads a tensor that is not among its arguments")};
  if (is_subgraph_)
    py::throw_unsupported("torch.cond: a branch reads a tensor that is not among the operands" + branch_where() +
                          "; Kiln does not lift a branch's free tensors into the cond node: pass it in `operands`");
  SourcePtr src = source_of(Value(t));
  if (!src) {
    py::BreakInfo info;
    info.kind = py::BreakKind::UnsupportedCall;
    info.reason = "Kiln cannot name where this tensor comes from";
    info.explanation = "  Explanation: the tensor was not reached from the frame's locals, globals or module attributes.\n";
    throw py::GraphBreakSignal{info};
  }
  add_tensor_guard(t, src, false);
  Placeholder p;
  p.source = src;
  p.real = Value(t);
  p.node.op = OpKind::Placeholder;
  p.node.target = src->graph_name();
  std::string name = p.node.target;
  if (!name.empty()) name[0] = char(tolower(static_cast<unsigned char>(name[0])));
  p.node.name = namer_.create_name(name);
  std::vector<bool> dynamic;
  for (size_t d = 0; d < t->t.sizes().size(); ++d) dynamic.push_back(is_dynamic(src, d, t->t.sizes()[d]));
  p.node.meta.val = val_of(Value(t), &dynamic);
  size_t index = phs_.size();
  p.fake = make_fake(Tensor::meta_strided(t->t.sizes(), t->t.strides(), t->t.dtype()), ph_id(index));
  p.fake->requires_grad = t->requires_grad;
  p.fake->device = t->device;
  phs_.push_back(std::move(p));
  lifted_[t] = index;
  return ph_id(index);
}

NodeId RegionTracer::resolve(py::TensorObj* t) {
  auto* info = static_cast<FakeInfo*>(t->fake.get());
  if (!info) return lift(t);
  // A branch reaching a tensor the enclosing graph computed, not handed in as an operand.
  if (info->owner != this) return lift(t);
  if (info->node != kNoNode) return info->node;
  // First use of one element of a multi-output op: Dynamo's getitem node.
  OpNode op;
  op.node.op = OpKind::CallFunction;
  op.node.target = "operator.getitem";
  op.node.name = namer_.create_name("getitem");
  op.node.args = {Arg::node(info->parent), Arg::integer(info->index)};
  op.node.meta.val = val_of(Value(t));
  op.node.meta.stack = user_stack();
  op.node.meta.scope = module_scope();
  op.step.kind = GraphStep::Kind::GetItem;
  op.step.index = info->index;
  ArgTemplate parent;
  parent.kind = ArgTemplate::Kind::Node;
  parent.node = info->parent;
  op.step.args = {parent};
  // Made at first use, perhaps under another grad mode: the element belongs to its parent's mode.
  if (info->parent >= 0 && size_t(info->parent) < ops_.size()) {
    op.step.grad_enabled = ops_[size_t(info->parent)].step.grad_enabled;
    op.step.autocast = ops_[size_t(info->parent)].step.autocast;
  }
  info->node = NodeId(ops_.size());
  op.step.node = info->node;
  ops_.push_back(std::move(op));
  return info->node;
}

Val RegionTracer::val_of(const Value& v, const std::vector<bool>* dynamic) const {
  if (v.is(ObjKind::Tensor)) {
    const Tensor& t = v.as<py::TensorObj>()->t;
    TensorMeta m;
    m.dtype = std::string(dtype_name(t.dtype()));
    m.device = v.as<py::TensorObj>()->device;
    const size_t n = t.sizes().size();
    for (size_t d = 0; d < n; ++d) {
      if (dynamic && (*dynamic)[d]) m.sizes.push_back(SymInt::symbol("s" + std::to_string(next_symbol_++)));
      else m.sizes.push_back(SymInt::of(t.sizes()[d]));
    }
    // A contiguous tensor's stride is the product of the later sizes, symbols included.
    std::vector<SymInt> strides(n);
    bool contiguous = t.is_contiguous();
    int64_t factor = 1;
    std::string expr;
    for (size_t d = n; d-- > 0;) {
      if (!contiguous || expr.empty()) strides[d] = SymInt::of(t.strides()[d]);
      else strides[d] = SymInt::symbol(factor == 1 ? expr : std::to_string(factor) + "*" + expr);
      if (m.sizes[d].is_symbolic()) expr = expr.empty() ? m.sizes[d].expr : m.sizes[d].expr + "*" + expr;
      else factor *= t.sizes()[d];
    }
    m.strides = strides;
    return Val::of_tensor(std::move(m));
  }
  if (v.is(ObjKind::Tuple) || v.is(ObjKind::List)) {
    py::NestingGuard nesting(" while describing a list");
    std::vector<Val> items;
    for (const Value& x : v.is(ObjKind::Tuple) ? v.as<py::Tuple>()->items : v.as<py::List>()->items) items.push_back(val_of(x));
    return Val::tuple(std::move(items));
  }
  if (v.is_int()) return Val::of_scalar(Arg::integer(v.as_int()));
  if (v.is_float()) return Val::of_scalar(Arg::real(v.as_float()));
  if (v.is_bool()) return Val::of_scalar(Arg::boolean(v.as_bool()));
  return Val{};
}

bool RegionTracer::to_arg(const Value& v, Arg& arg, ArgTemplate& tmpl) {
  tmpl.value = v;
  switch (v.tag()) {
    case Value::Tag::None: arg = Arg::none(); return true;
    case Value::Tag::Bool: arg = Arg::boolean(v.as_bool()); return true;
    case Value::Tag::Int: arg = Arg::integer(v.as_int()); return true;
    case Value::Tag::Float: arg = Arg::real(v.as_float()); return true;
    case Value::Tag::Obj: break;
  }
  // Deeply nested lists end in Python's RecursionError, not a C++ stack overflow.
  py::NestingGuard nesting(" while putting a list into a graph");
  switch (v.obj()->kind) {
    case ObjKind::Str: arg = Arg::str(v.as<py::Str>()->s); return true;
    case ObjKind::Tensor: {
      NodeId id = resolve(v.as<py::TensorObj>());
      arg = Arg::node(id);
      tmpl.kind = ArgTemplate::Kind::Node;
      tmpl.node = id;
      tmpl.value = Value();
      return true;
    }
    case ObjKind::Tuple:
    case ObjKind::List: {
      const py::ValueVec& items = v.is(ObjKind::Tuple) ? v.as<py::Tuple>()->items : v.as<py::List>()->items;
      std::vector<Arg> args;
      tmpl.kind = v.is(ObjKind::Tuple) ? ArgTemplate::Kind::Tuple : ArgTemplate::Kind::List;
      for (const Value& x : items) {
        Arg a;
        ArgTemplate t;
        if (!to_arg(x, a, t)) return false;
        args.push_back(std::move(a));
        tmpl.items.push_back(std::move(t));
      }
      arg = v.is(ObjKind::Tuple) ? Arg::tuple(std::move(args)) : Arg::list(std::move(args));
      // The items rebuild it; holding the list itself would keep the region's
      // tensors in it referenced, and finish() would take them for tensors kept
      // outside the frame (torch.cat([x * 2, x]) recompiled on every call).
      // A torch.Size keeps its value: build_arg reads is_size from it.
      if (!(v.is(ObjKind::Tuple) && v.as<py::Tuple>()->is_size)) tmpl.value = Value();
      return true;
    }
    case ObjKind::DType: arg = Arg::dtype(std::string(dtype_name(v.as<py::DTypeObj>()->dtype))); return true;
    case ObjKind::Device: arg = Arg::device(v.as<py::DeviceObj>()->str()); return true;
    case ObjKind::Ellipsis: arg = Arg::ellipsis(); return true;
    case ObjKind::Range: {
      // Dynamo puts the range itself into the node (x[range(n), y] = v); the
      // graph IR spells it as the list of its ints, which every op reads alike.
      // The replay passes the range (tmpl.value).
      auto* r = v.as<py::RangeObj>();
      std::vector<Arg> items;
      for (int64_t i = r->start; r->step > 0 ? i < r->stop : i > r->stop; i += r->step) {
        if (items.size() >= 4096) return false;
        items.push_back(Arg::integer(i));
      }
      arg = Arg::list(std::move(items));
      return true;
    }
    case ObjKind::Slice: {
      auto* s = v.as<py::SliceObj>();
      Arg a, b, c;
      ArgTemplate ta, tb, tc;
      if (!to_arg(s->start, a, ta) || !to_arg(s->stop, b, tb) || !to_arg(s->step, c, tc)) return false;
      arg = Arg::slice(a, b, c);
      tmpl.kind = ArgTemplate::Kind::Slice;
      tmpl.items = {ta, tb, tc};
      tmpl.value = Value();
      return true;
    }
    default: return false;
  }
}

std::vector<StackFrame> RegionTracer::user_frames() const {
  std::vector<StackFrame> out;
  for (const TracedFrame* tf : frames_) {
    if (!tf->user_code) continue;
    const py::Frame& f = *tf->frame;
    const py::Instr& in = f.code->code[size_t(std::min<int>(f.pc, int(f.code->code.size()) - 1))];
    StackFrame sf;
    sf.file = f.code->filename;
    sf.line = in.line;
    sf.function = f.code->name;
    sf.code = py::source_line(*f.code, in.line);
    sf.code.erase(sf.code.find_last_not_of(" \t\r") + 1);
    out.push_back(std::move(sf));
  }
  return out;
}

std::vector<StackFrame> RegionTracer::user_stack() const {
  // The innermost frame of user code, as Dynamo's "# File:" lines show it.
  std::vector<StackFrame> all = user_frames();
  if (all.empty()) return {};
  return {all.back()};
}

namespace {
// L['self']._modules['layer1']._modules['0'] -> "layer1.0"; the root (a local
// or global) is ""; nullopt for a value not reached through _modules.
std::optional<std::string> module_path(const Source* s) {
  if (!s) return std::nullopt;
  if (s->kind == Source::Kind::Local || s->kind == Source::Kind::Global) return std::string();
  if (s->kind != Source::Kind::Item || !s->base || s->base->kind != Source::Kind::Attr || s->base->name != "_modules")
    return std::nullopt;
  std::optional<std::string> parent = module_path(s->base->base.get());
  if (!parent) return std::nullopt;
  std::string key = s->key.is(ObjKind::Str) ? s->key.as<py::Str>()->s : s->key.is_int() ? std::to_string(s->key.as_int()) : "";
  if (key.empty()) return std::nullopt;
  return parent->empty() ? key : *parent + "." + key;
}
}  // namespace

std::string RegionTracer::module_scope() const {
  for (auto it = frames_.rbegin(); it != frames_.rend(); ++it) {
    const TracedFrame& tf = **it;
    const py::Frame& f = *tf.frame;
    if (tf.locals.empty() || f.code->varnames.empty() || f.code->varnames[0] != "self" || f.locals.empty() ||
        !f.locals[0].is(ObjKind::Instance))
      continue;
    if (std::optional<std::string> path = module_path(tf.locals[0].get())) return *path;
  }
  return {};
}

Value RegionTracer::record(py::VM&, const py::TorchCall& call, const std::function<Value(const py::CallArgs&)>& run_meta) {
  // A Function's forward runs eagerly on every call (the node replays apply),
  // so its in-place ops need no undoing.
  if (is_subgraph_ && !function_body_ && !in_graph_body_) {
    // Only one branch runs: a write into an operand (or a view of one) in a
    // branch would have to be undone for the other. Dynamo refuses input
    // mutation under grad; Kiln refuses every in-place op in a branch.
    const std::string& t = call.graph_target;
    const bool in_place = (call.is_method && t.size() > 1 && t.back() == '_' && !t.starts_with("__")) ||
                          t == "operator.setitem" || (t.starts_with("operator.i") && t != "operator.index" && t != "operator.invert");
    if (in_place)
      py::throw_unsupported("torch.cond: a branch writes into a tensor in place (" + t + ")" + branch_where() +
                            "; Kiln traces only branches without in-place ops");
  }
  OpNode op;
  op.node.op = call.is_method ? OpKind::CallMethod : OpKind::CallFunction;
  op.node.target = call.graph_target;
  py::ValueVec subst;
  for (size_t i = 0; i < call.args.npos; ++i) {
    const Value& a = call.args[i];
    Arg arg;
    ArgTemplate tmpl;
    auto pending = std::find_if(pending_scalars_.begin(), pending_scalars_.end(), [&](const PendingScalar& p) {
      return p.value.tag() == a.tag() && py::equal(p.value, a);
    });
    if (pending != pending_scalars_.end()) {
      NodeId ph = lift_scalar(a, pending->source);
      pending_scalars_.erase(pending);
      op.node.args.push_back(Arg::node(ph));
      tmpl.kind = ArgTemplate::Kind::Node;
      tmpl.node = ph;
      op.step.args.push_back(std::move(tmpl));
      subst.push_back(a);
      continue;
    }
    if (!to_arg(a, arg, tmpl)) {
      py::BreakInfo info;
      info.kind = py::BreakKind::UnsupportedCall;
      info.reason = "Kiln cannot put a " + py::type_name(a) + " into a graph";
      info.explanation = "  Explanation: argument " + std::to_string(i) + " of " + call.graph_target + " is a " + py::type_name(a) + "\n";
      throw py::GraphBreakSignal{info};
    }
    op.node.args.push_back(std::move(arg));
    op.step.args.push_back(std::move(tmpl));
    // Meta functions read the fake (placeholder) standing for a real input.
    if (a.is(ObjKind::Tensor) && !a.as<py::TensorObj>()->fake) subst.push_back(Value(phs_[lifted_[a.as<py::TensorObj>()]].fake));
    else subst.push_back(a);
  }
  std::vector<std::pair<std::string, Value>> kw_subst;
  if (call.args.kw) {
    for (const auto& [k, a] : *call.args.kw) {
      Arg arg;
      ArgTemplate tmpl;
      if (!to_arg(a, arg, tmpl)) {
        py::BreakInfo info;
        info.reason = "Kiln cannot put a " + py::type_name(a) + " into a graph";
        throw py::GraphBreakSignal{info};
      }
      op.node.kwargs.emplace_back(k, std::move(arg));
      op.step.kwargs.emplace_back(k, std::move(tmpl));
      if (a.is(ObjKind::Tensor) && !a.as<py::TensorObj>()->fake) kw_subst.emplace_back(k, Value(phs_[lifted_[a.as<py::TensorObj>()]].fake));
      else kw_subst.emplace_back(k, a);
    }
  }
  // A leaf made with requires_grad=True is an autograd leaf the program keeps
  // (x.grad after backward): a graph output is not one. Dynamo makes it
  // outside its graph; Kiln breaks the graph so the factory runs eagerly.
  for (const auto& [k, a] : kw_subst)
    if (k == "requires_grad" && a.is_bool() && a.as_bool()) {
      py::BreakInfo info;
      info.kind = py::BreakKind::UnsupportedCall;
      info.reason = "Kiln makes a tensor created with requires_grad=True outside the graph";
      info.explanation = "  Explanation: " + call.graph_target +
                         "(..., requires_grad=True) makes an autograd leaf; it runs eagerly and the graph resumes "
                         "after it.\n";
      throw py::GraphBreakSignal{info};
    }
  Value result;
  try {
    result = run_meta(py::CallArgs{subst.data(), subst.size(), kw_subst.empty() ? nullptr : &kw_subst});
  } catch (py::PyError& e) {
    // Meta kernels refuse ops whose output shape depends on the data: Dynamo
    // breaks the graph there (capture_dynamic_output_shape_ops is off).
    if (e.message().find("depends on the data") == std::string::npos) throw;
    std::string op = e.message().find("distinct values") != std::string::npos ? "aten._unique2.default" : "aten.nonzero.default";
    py::BreakInfo info;
    info.kind = py::BreakKind::DynamicShape;
    info.reason = "Dynamic shape operator";
    info.explanation = "  Explanation: Operator `" + op + "`'s output shape depends on input Tensor data.\n"
                       "  Hint: Enable tracing of dynamic shape operators with "
                       "`torch._dynamo.config.capture_dynamic_output_shape_ops = True`\n";
    throw py::GraphBreakSignal{info};
  }
  op.step.grad_enabled = vm_.grad_enabled;
  op.step.autocast = torchapi::autocast_state();
  set_step_call(op.step, call);
  op.node.name = namer_.create_name(last_part(call.graph_target));
  op.node.meta.val = val_of(result);
  op.node.meta.stack = user_stack();
  op.node.meta.scope = module_scope();
  NodeId id = NodeId(ops_.size());
  op.step.node = id;
  ops_.push_back(std::move(op));
  // Tensor results become fakes tied to the node. A tensor that already is one
  // came back from an in-place op or an identity (eval-mode dropout): later uses
  // keep naming the node that made it, as Dynamo's graphs name a mutated input.
  if (result.is(ObjKind::Tensor) && !result.as<py::TensorObj>()->fake) {
    auto* t = result.as<py::TensorObj>();
    auto info = std::make_shared<FakeInfo>();
    info->node = id;
    info->owner = this;
    t->fake = info;
    fakes_.push_back(Ref<py::TensorObj>(t));
  } else {
    const py::ValueVec items = result_items(result);
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is(ObjKind::Tensor) || items[i].as<py::TensorObj>()->fake) continue;
      auto* t = items[i].as<py::TensorObj>();
      auto info = std::make_shared<FakeInfo>();
      info->parent = id;
      info->index = int(i);
      info->owner = this;
      t->fake = info;
      fakes_.push_back(Ref<py::TensorObj>(t));
    }
  }
  // An identity on a graph input (x.to(x.device), eval dropout) hands back the
  // input's fake: the program gets the real object instead, which names the
  // same placeholder, so storing it (self.scale = self.scale.to(dev)) keeps a
  // real tensor in the module rather than a meta one after the region.
  if (result.is(ObjKind::Tensor))
    for (const Placeholder& p : phs_)
      if (p.fake.get() == result.as<py::TensorObj>()) return p.real;
  return result;
}

Value RegionTracer::inspect_tensor(py::VM&, const Value& v) {
  if (v.is(ObjKind::Tensor) && !v.as<py::TensorObj>()->fake) {
    SourcePtr src = source_of(v);
    if (src) add_tensor_guard(v.as<py::TensorObj>(), src, true);
  } else if (v.is(ObjKind::Tensor)) {
    // An intermediate's sizes derive from the inputs' in ways Kiln does not
    // track symbolically: reading them pins every dynamic input size.
    specialize_all_dynamic();
  }
  return v;
}

Value RegionTracer::inspect_sizes(py::VM& vm, const Value& v) {
  if (!v.is(ObjKind::Tensor) || v.as<py::TensorObj>()->fake || !source_of(v)) return inspect_tensor(vm, v);
  lift(v.as<py::TensorObj>());  // guarded with its dynamic sizes; each size is specialized only if Python code uses it
  return v;
}

void RegionTracer::specialize_all_dynamic() {
  for (Placeholder& p : phs_) {
    if (!p.real.is(ObjKind::Tensor)) continue;
    add_tensor_guard(p.real.as<py::TensorObj>(), p.source, true);
    p.node.meta.val = val_of(p.real);
  }
}

// The placeholder of the tensor whose `.shape[d]` `src` reads, and d; null when
// `src` is not such a read.
RegionTracer::Placeholder* RegionTracer::shape_read(const SourcePtr& src, size_t& dim) {
  if (!src || src->kind != Source::Kind::Item || !src->key.is_int()) return nullptr;
  const Source* attr = src->base.get();
  if (!attr || attr->kind != Source::Kind::Attr || attr->name != "shape") return nullptr;
  const std::string base = attr->base->str();
  for (Placeholder& p : phs_)
    if (p.real.is(ObjKind::Tensor) && p.source->str() == base) {
      dim = size_t(src->key.as_int());
      return &p;
    }
  return nullptr;
}

void RegionTracer::truncate(size_t nops, size_t nphs) {
  // Tensors the dropped ops made stand for nothing now: they must not become
  // graph outputs of the shorter region.
  // An element of a kept multi-output op whose getitem was dropped stays, and
  // makes its getitem again on its next use.
  auto dropped = [&](const Ref<py::TensorObj>& f) {
    auto* info = static_cast<FakeInfo*>(f->fake.get());
    if (!info) return false;
    if (info->parent != kNoNode) {
      if (info->parent >= 0 && size_t(info->parent) >= nops) return true;
      if (info->node >= 0 && size_t(info->node) >= nops) info->node = kNoNode;
      return false;
    }
    return info->node >= 0 && size_t(info->node) >= nops;
  };
  for (auto it = fakes_.begin(); it != fakes_.end();) {
    if (dropped(*it)) {
      (*it)->fake.reset();
      it = fakes_.erase(it);
    } else {
      ++it;
    }
  }
  // The names the dropped nodes took (and those they were renamed from) are
  // free again: Dynamo's restarted trace never makes them.
  namer_.rollback(namer_mark_);
  if (out_.global_reads.size() > reads_mark_) out_.global_reads.resize(reads_mark_);
  // A logging call inside the undone step runs again, eagerly, with the rest of it.
  if (deferred_.size() > deferred_mark_) deferred_.resize(deferred_mark_);
  while (!subgraphs_.empty() && subgraphs_.back().first >= nops) subgraphs_.pop_back();
  while (ops_.size() > nops) ops_.pop_back();
  for (auto it = renames_.rbegin(); it != renames_.rend(); ++it)
    if (it->first < ops_.size()) {
      ops_[it->first].node.name = it->second;
      ops_[it->first].renamed = false;
    }
  renames_.clear();
  while (phs_.size() > nphs) {
    if (phs_.back().real.is(ObjKind::Tensor)) lifted_.erase(phs_.back().real.as<py::TensorObj>());
    else scalar_inputs_.erase(phs_.back().source->str());
    phs_.pop_back();
  }
}

void RegionTracer::rename_on_store(TracedFrame& tf, const Value& v, const std::string& name) {
  if (!tf.user_code || !v.is(ObjKind::Tensor) || !v.as<py::TensorObj>()->fake) return;
  auto* info = static_cast<FakeInfo*>(v.as<py::TensorObj>()->fake.get());
  // `q, k, v = x.chunk(3)`: Dynamo makes each getitem as it unpacks and names it after the variable.
  if (info->node == kNoNode && info->parent != kNoNode) resolve(v.as<py::TensorObj>());
  if (info->node < 0 || size_t(info->node) >= ops_.size()) return;
  OpNode& op = ops_[size_t(info->node)];
  if (op.renamed) return;
  op.renamed = true;
  renames_.emplace_back(size_t(info->node), op.node.name);
  op.node.name = namer_.rename(op.node.name, name);
}

// ---- torch.cond ----

std::string RegionTracer::branch_where() const {
  std::vector<StackFrame> frames = user_frames();
  if (frames.empty()) return {};
  return " (" + frames.back().file + ":" + std::to_string(frames.back().line) + ")";
}

RegionTracer::Branch RegionTracer::trace_branch(const std::function<Value(const py::ValueVec&)>& call, const char* which,
                                                const std::vector<NodeId>& operand_ids, bool function_body,
                                                const py::Function* in_graph_root) {
  Branch b;
  b.region = std::make_shared<RegionResult>();
  RegionTracer sub(vm_, settings_, *b.region);
  sub.is_subgraph_ = true;
  sub.function_body_ = function_body;
  sub.in_graph_body_ = in_graph_root != nullptr;
  sub.in_graph_root_ = in_graph_root;
  sub.frames_ = frames_;  // where the cond was called: errors and node stacks name the user's line
  // The branch's placeholders take the operands' names: the namespace knows
  // them already, so the placeholders are l_x__1, as Dynamo's subgraphs name them.
  for (NodeId id : operand_ids) sub.namer_.create_name(node_name(id));
  py::ValueVec fakes;
  for (size_t i = 0; i < operand_ids.size(); ++i) {
    Placeholder p;
    p.node.op = OpKind::Placeholder;
    p.node.target = node_name(operand_ids[i]);
    p.node.name = sub.namer_.create_name(p.node.target);
    p.node.meta.val = node_val(operand_ids[i]);
    const py::TensorObj* outer = operand_ids[i] < -1 ? phs_[size_t(-operand_ids[i] - 2)].fake.get() : nullptr;
    for (const auto& f : fakes_)
      if (auto* info = static_cast<FakeInfo*>(f->fake.get()); !outer && info && info->node == operand_ids[i]) outer = f.get();
    KILN_CHECK(outer, "cond operand ", node_name(operand_ids[i]), " has no fake tensor");
    p.fake = sub.make_fake(Tensor::meta_strided(outer->t.sizes(), outer->t.strides(), outer->t.dtype()), ph_id(i));
    p.fake->requires_grad = outer->requires_grad;
    p.fake->device = outer->device;
    fakes.push_back(Value(p.fake));
    sub.phs_.push_back(std::move(p));
  }
  struct Restore {
    py::VM& vm;
    py::Tracer* saved;
    RegionTracer* saved_active;
    ~Restore() {
      vm.tracer = saved;
      active_tracer = saved_active;
    }
  } restore{vm_, vm_.tracer, active_tracer};
  vm_.tracer = &sub;
  active_tracer = &sub;
  try {
    b.structure = call(fakes);
  } catch (py::GraphBreakSignal& s) {
    if (in_graph_root) throw;
    if (function_body) {
      if (s.info.reason == function_body_break("").reason) throw;
      throw py::GraphBreakSignal{function_body_break(s.info.reason)};
    }
    // Dynamo's cond has no fallback to eager: a break in a branch is an error.
    const std::vector<StackFrame>& at = sub.break_stack_;
    std::string where = at.empty() ? std::string() : " (" + at.back().file + ":" + std::to_string(at.back().line) + ")";
    throw py::PyError("torch._dynamo.exc.UncapturedHigherOrderOpError",
                      std::string("Cond doesn't work unless it is captured completely with torch.compile. ") + which +
                          " breaks the graph" + where + ": " + s.info.reason);
  }
  // Guards the branch took (a global it read) hold for the enclosing region too.
  auto take_guards = [&] {
    for (Guard& g : b.region->guards) add_guard(g, false);
    for (GlobalRead& r : b.region->global_reads) {
      r.inputs_before = phs_.size();
      if (std::none_of(out_.global_reads.begin(), out_.global_reads.end(), [&](const GlobalRead& x) { return x.name == r.name; }))
        out_.global_reads.push_back(r);
    }
    b.region->guards.clear();
  };
  // A body kept whole: only its outputs' metadata and its guards are wanted.
  if (in_graph_root) {
    take_guards();
    return b;
  }
  const bool single = b.structure.is(ObjKind::Tensor);
  const py::ValueVec items = single ? py::ValueVec{b.structure} : result_items(b.structure);
  if (function_body && (items.empty() || (!single && !b.structure.is(ObjKind::Tuple))))
    throw py::GraphBreakSignal{function_body_break("its forward returns a " + py::type_name(b.structure))};
  if (items.empty() || (!single && !b.structure.is(ObjKind::Tuple) && !b.structure.is(ObjKind::List)))
    throw py::PyError("torch._dynamo.exc.UncapturedHigherOrderOpError",
                      std::string("Cond doesn't work unless it is captured completely with torch.compile. Expected ") + which +
                          " to return a tensor or a tuple of tensors, got " + py::type_name(b.structure) + branch_where());
  std::vector<NodeId> out_ids;
  for (const Value& v : items) {
    if (function_body && !v.is(ObjKind::Tensor))
      throw py::GraphBreakSignal{function_body_break("its forward returns a " + py::type_name(v) + " among its outputs")};
    if (!v.is(ObjKind::Tensor))
      py::throw_unsupported(std::string("torch.cond: ") + which + " returns a " + py::type_name(v) + branch_where() +
                            "; Kiln traces branches that return tensors only");
    b.outs.push_back(v.as<py::TensorObj>());
    out_ids.push_back(sub.resolve(v.as<py::TensorObj>()));
  }
  b.region->graph = sub.build_subgraph(out_ids);
  take_guards();
  return b;
}

// Appends the traced ops to `g` (after its placeholders) and their steps to the
// result, node ids rewritten by `remap` (placeholders are negative while
// tracing), then the subgraphs and the output node returning `outs`.
void RegionTracer::OpNode::renumber(const std::function<NodeId(NodeId)>& map) {
  std::function<void(Arg&)> in_arg = [&](Arg& a) {
    if (a.kind == Arg::Kind::Node) a.i = map(NodeId(a.i));
    for (Arg& x : a.items) in_arg(x);
  };
  std::function<void(ArgTemplate&)> in_template = [&](ArgTemplate& a) {
    if (a.kind == ArgTemplate::Kind::Node) a.node = map(a.node);
    for (ArgTemplate& x : a.items) in_template(x);
  };
  for (Arg& a : node.args) in_arg(a);
  for (auto& kv : node.kwargs) in_arg(kv.second);
  for (ArgTemplate& a : step.args) in_template(a);
  for (auto& kv : step.kwargs) in_template(kv.second);
  step.node = map(step.node);
}

void RegionTracer::place_ops(Graph& g, const std::function<NodeId(NodeId)>& remap, const std::vector<NodeId>& outs) {
  for (OpNode& op : ops_) {
    op.renumber(remap);
    g.add(op.node);
    out_.steps.push_back(op.step);
  }
  for (auto& entry : subgraphs_) g.subgraphs.push_back(std::move(entry.second));
  std::vector<Arg> out_args;
  for (NodeId id : outs) out_args.push_back(Arg::node(remap(id)));
  Node out_node;
  out_node.op = OpKind::Output;
  out_node.name = "output";
  out_node.target = "output";
  out_node.args = {Arg::tuple(std::move(out_args))};
  g.add(std::move(out_node));
}

// The branch's graph: its placeholders (the operands), its ops, its outputs
// flattened. Unlike finalize() nothing runs: only the chosen branch runs, later.
Graph RegionTracer::build_subgraph(const std::vector<NodeId>& outs) {
  const NodeId nph = NodeId(phs_.size());
  Graph g;
  for (const Placeholder& p : phs_) g.add(p.node);
  place_ops(g, [nph](NodeId id) { return id < -1 ? NodeId(-id - 2) : id + nph; }, outs);
  out_.op_count = int(ops_.size());
  for (auto& f : fakes_) f->fake.reset();
  return g;
}

// Pushes a get_attr node named `name` (a higher-order op's body), and the
// subgraph it names when `graph` is given.
NodeId RegionTracer::push_subgraph_attr(const std::string& name, const Graph* graph) {
  OpNode attr;
  attr.node.op = OpKind::GetAttr;
  attr.node.name = namer_.create_name(name);
  attr.node.target = name;
  attr.node.meta.stack = user_stack();
  attr.node.meta.scope = module_scope();
  attr.step.kind = GraphStep::Kind::Attr;
  attr.step.grad_enabled = vm_.grad_enabled;
  attr.step.autocast = torchapi::autocast_state();
  const NodeId id = NodeId(ops_.size());
  attr.step.node = id;
  if (graph) subgraphs_.push_back({ops_.size(), Subgraph{name, *graph}});
  ops_.push_back(std::move(attr));
  return id;
}

// Pushes a higher-order op whose outputs are fake tensors shaped like `like`
// (requires_grad per output as the caller says), then one getitem per
// output right after it, as Dynamo unflattens such an op's result at once.
// Item `index` of node `parent`'s tuple result, shaped like `like`: its
// getitem node is made when something reads it (resolve).
Ref<py::TensorObj> RegionTracer::make_item_fake(const py::TensorObj* like, NodeId parent, int index, bool requires_grad) {
  auto obj = py::make<py::TensorObj>(Tensor::meta_strided(like->t.sizes(), like->t.strides(), like->t.dtype()));
  obj->requires_grad = requires_grad;
  obj->device = like->device;
  auto info = std::make_shared<FakeInfo>();
  info->parent = parent;
  info->index = index;
  info->owner = this;
  obj->fake = info;
  fakes_.push_back(obj);
  return obj;
}

py::ValueVec RegionTracer::push_with_outputs(OpNode op, const std::vector<py::TensorObj*>& like,
                                             const std::function<bool(size_t)>& requires_grad) {
  std::vector<Val> vals;
  py::ValueVec results;
  const NodeId id = NodeId(ops_.size());
  for (size_t i = 0; i < like.size(); ++i) {
    Ref<py::TensorObj> obj = make_item_fake(like[i], id, int(i), requires_grad(i));
    vals.push_back(val_of(Value(obj)));
    results.push_back(Value(obj));
  }
  op.node.meta.val = Val::tuple(std::move(vals));
  op.node.meta.stack = user_stack();
  op.node.meta.scope = module_scope();
  op.step.node = id;
  ops_.push_back(std::move(op));
  for (const Value& r : results) resolve(r.as<py::TensorObj>());
  return results;
}

Value RegionTracer::trace_cond(const Value& pred, const Value& true_fn, const Value& false_fn, const py::ValueVec& operands) {
  OpNode op;
  op.node.op = OpKind::CallFunction;
  op.node.target = "higher_order::cond";
  Arg pred_arg;
  ArgTemplate pred_tmpl;
  to_arg(pred, pred_arg, pred_tmpl);
  std::vector<NodeId> operand_ids;
  std::vector<Arg> operand_args;
  ArgTemplate operand_tmpl;
  operand_tmpl.kind = ArgTemplate::Kind::Tuple;
  operand_tmpl.value = py::tuple_value({});
  for (const Value& o : operands) {
    Arg a;
    ArgTemplate t;
    to_arg(o, a, t);
    operand_ids.push_back(a.node_id());
    operand_args.push_back(std::move(a));
    operand_tmpl.items.push_back(std::move(t));
  }
  Branch yes = trace_branch([&](const py::ValueVec& fakes) { return vm_.call(true_fn, fakes); }, "true_fn", operand_ids);
  Branch no = trace_branch([&](const py::ValueVec& fakes) { return vm_.call(false_fn, fakes); }, "false_fn", operand_ids);
  // Both branches must give outputs of one structure and metadata: the graph
  // after the cond is traced once, for either.
  auto fail = [&](const std::string& what) {
    throw py::PyError("torch._dynamo.exc.UncapturedHigherOrderOpError",
                      "Cond doesn't work unless it is captured completely with torch.compile. " + what + branch_where());
  };
  if (yes.outs.size() != no.outs.size() || yes.structure.is(ObjKind::Tensor) != no.structure.is(ObjKind::Tensor))
    fail("Expected branches to return the same pytree structure.");
  for (size_t i = 0; i < yes.outs.size(); ++i) {
    const Tensor& a = yes.outs[i]->t;
    const Tensor& b = no.outs[i]->t;
    if (a.dtype() != b.dtype() || yes.outs[i]->device != no.outs[i]->device)
      fail("Expected each tensor to have same metadata but got: output " + std::to_string(i) + " is " +
           std::string(dtype_name(a.dtype())) + " in true_fn and " + std::string(dtype_name(b.dtype())) + " in false_fn.");
    if (a.sizes() != b.sizes() || a.strides() != b.strides())
      py::throw_unsupported("torch.cond: output " + std::to_string(i) + " of the branches differs in size or stride" +
                            branch_where() + "; Kiln traces only branches whose outputs have the same sizes and strides");
  }
  const int n = next_cond_++;
  const std::string names[2] = {"cond_true_" + std::to_string(n), "cond_false_" + std::to_string(n)};
  const NodeId attr_ids[2] = {push_subgraph_attr(names[0], &yes.region->graph),
                              push_subgraph_attr(names[1], &no.region->graph)};
  op.node.args = {pred_arg, Arg::node(attr_ids[0]), Arg::node(attr_ids[1]), Arg::tuple(std::move(operand_args))};
  op.step.kind = GraphStep::Kind::Cond;
  op.step.args = {pred_tmpl, ArgTemplate{}, ArgTemplate{}, operand_tmpl};
  op.step.branches = {yes.region, no.region};
  op.step.grad_enabled = vm_.grad_enabled;
  op.step.autocast = torchapi::autocast_state();
  op.node.name = namer_.create_name("cond");
  py::ValueVec results = push_with_outputs(std::move(op), yes.outs, [&](size_t i) {
    return yes.outs[i]->requires_grad || no.outs[i]->requires_grad;
  });
  if (yes.structure.is(ObjKind::Tensor)) return results[0];
  if (yes.structure.is(ObjKind::List)) return py::list_value(std::move(results));
  return py::tuple_value(std::move(results));
}

namespace {

// The autocast object whose __exit__ a with-block left on the value stack
// (WithEnter pushes it), or null.
const py::Instance* open_autocast(const Value& v) {
  if (!v.is(ObjKind::BoundMethod)) return nullptr;
  const auto* m = v.as<py::BoundMethod>();
  if (!m->self.is(ObjKind::Instance) || !m->func.is(ObjKind::Function) || m->func.as<py::Function>()->code->name != "__exit__")
    return nullptr;
  const auto* inst = m->self.as<py::Instance>();
  return inst->dict->find_str("_kiln_given") ? inst : nullptr;
}

}  // namespace

void RegionTracer::autocast_marker(bool enter, const Value& ctx) {
  OpNode op;
  op.node.op = OpKind::CallFunction;
  op.node.target = enter ? "torch.amp.autocast_mode._enter_autocast" : "torch.amp.autocast_mode._exit_autocast";
  if (enter) {
    const Value* given = ctx.is(ObjKind::Instance) ? ctx.as<py::Instance>()->dict->find_str("_kiln_given") : nullptr;
    KILN_CHECK(given, "an autocast object without its constructor's arguments");
    for (const Value& v : result_items(*given)) {
      Arg a;
      ArgTemplate t;
      if (!to_arg(v, a, t))
        py::throw_unsupported("torch.autocast(...) in compiled code with a " + py::type_name(v) +
                              " argument: Kiln puts only constants into its _enter_autocast node");
      op.node.args.push_back(std::move(a));
    }
  } else {
    NodeId enter_id = kNoNode;
    for (auto it = autocast_enters_.rbegin(); it != autocast_enters_.rend() && enter_id == kNoNode; ++it)
      if (it->first == ctx.obj() && size_t(it->second) < ops_.size() &&
          ops_[size_t(it->second)].node.target == "torch.amp.autocast_mode._enter_autocast")
        enter_id = it->second;
    op.node.args.push_back(enter_id == kNoNode ? Arg::none() : Arg::node(enter_id));
  }
  op.step.kind = GraphStep::Kind::Marker;
  op.step.grad_enabled = vm_.grad_enabled;
  op.step.autocast = torchapi::autocast_state();
  op.node.name = namer_.create_name(enter ? "_enter_autocast" : "_exit_autocast");
  op.node.meta.stack = user_stack();
  op.node.meta.scope = module_scope();
  const NodeId id = NodeId(ops_.size());
  op.step.node = id;
  ops_.push_back(std::move(op));
  if (enter) autocast_enters_.push_back({ctx.obj(), id});
}

void RegionTracer::enter_open_autocast_blocks(const py::Frame& frame) {
  for (const Value& v : frame.stack)
    if (open_autocast(v)) autocast_marker(true, v.as<py::BoundMethod>()->self);
}

void RegionTracer::exit_open_autocast_blocks(const py::Frame& frame) {
  for (auto it = frame.stack.rbegin(); it != frame.stack.rend(); ++it)
    if (open_autocast(*it)) autocast_marker(false, it->as<py::BoundMethod>()->self);
}

Value RegionTracer::trace_function_apply(const Value& cls, const Value& args, const Value& forward_helper) {
  const py::ValueVec items = result_items(args);
  Arg args_arg;
  ArgTemplate args_tmpl;
  if (!to_arg(args, args_arg, args_tmpl))
    throw py::GraphBreakSignal{function_body_break("an argument Kiln cannot put into a graph")};
  // Dynamo passes the tensor arguments to the node and bakes the others into
  // the forward subgraph; args_tensor_mask says which were which.
  std::vector<NodeId> operand_ids;
  std::vector<Arg> node_args;
  std::vector<Arg> mask;
  bool any_requires_grad = false;
  for (size_t i = 0; i < items.size(); ++i) {
    const bool tensor = items[i].is(ObjKind::Tensor);
    mask.push_back(Arg::boolean(tensor));
    if (!tensor) continue;
    operand_ids.push_back(args_arg.items[i].node_id());
    node_args.push_back(args_arg.items[i]);
    any_requires_grad |= items[i].as<py::TensorObj>()->requires_grad;
  }
  std::vector<int64_t> non_differentiable;
  Branch fwd = trace_branch(
      [&](const py::ValueVec& fakes) {
        py::ValueVec with_fakes = items;
        size_t k = 0;
        for (Value& v : with_fakes)
          if (v.is(ObjKind::Tensor)) v = fakes.at(k++);
        const py::ValueVec r = result_items(vm_.call(forward_helper, py::ValueVec{cls, py::tuple_value(std::move(with_fakes))}));
        KILN_CHECK(r.size() == 2, "the forward helper returns the output and the non-differentiable indices");
        for (const Value& i : result_items(r[1])) non_differentiable.push_back(i.as_int());
        return r[0];
      },
      "forward", operand_ids, true);
  const int n = next_function_++;
  const std::string names[2] = {"fwd_body_" + std::to_string(n), "bwd_body_" + std::to_string(n)};
  // Only the forward is traced: the backward runs as the class's own
  // backward from the eager autograd node the replayed apply makes, so
  // bwd_body_N names no subgraph here.
  const NodeId attr_ids[2] = {push_subgraph_attr(names[0], &fwd.region->graph), push_subgraph_attr(names[1], nullptr)};
  OpNode op;
  op.node.op = OpKind::CallFunction;
  op.node.target = "higher_order::autograd_function_apply";
  op.node.args = {Arg::node(attr_ids[0]), Arg::node(attr_ids[1])};
  for (Arg& a : node_args) op.node.args.push_back(std::move(a));
  op.node.kwargs.emplace_back("args_tensor_mask", Arg::list(std::move(mask)));
  std::vector<Arg> marked;
  for (int64_t i : non_differentiable) marked.push_back(Arg::integer(i));
  op.node.kwargs.emplace_back("non_differentiable_idx", Arg::list(std::move(marked)));
  op.step.kind = GraphStep::Kind::FunctionApply;
  op.step.args = {ArgTemplate{}, ArgTemplate{}, args_tmpl};
  op.step.function = cls;
  op.step.single_output = fwd.structure.is(ObjKind::Tensor);
  op.step.grad_enabled = vm_.grad_enabled;
  op.step.autocast = torchapi::autocast_state();
  op.node.name = namer_.create_name("autograd_function_apply");
  // As eager apply marks them.
  py::ValueVec results = push_with_outputs(std::move(op), fwd.outs, [&](size_t i) {
    return vm_.grad_enabled && any_requires_grad &&
           std::find(non_differentiable.begin(), non_differentiable.end(), int64_t(i)) == non_differentiable.end();
  });
  if (fwd.structure.is(ObjKind::Tensor)) return results[0];
  return py::tuple_value(std::move(results));
}

// The target Dynamo records a call of `fn` under when it keeps the call whole:
// the function's __kiln_graph_target__, set where Kiln's library defines it.
const std::string* in_graph_target(const py::Function* fn) {
  if (!fn || !fn->attrs) return nullptr;
  const Value* v = fn->attrs->find_str("__kiln_graph_target__");
  return v && v->is(ObjKind::Str) ? &v->as<py::Str>()->s : nullptr;
}

std::optional<Value> RegionTracer::trace_in_graph_call(py::Frame& frame, const std::string& target) {
  // A dynamic scalar handed to the call would have to become a graph input of
  // the node: left to the inlined ops, which know how.
  if (!pending_scalars_.empty()) return std::nullopt;
  // The call as the function received it: its positional parameters (then
  // *args), and its keyword-only parameters (then **kwargs) as keywords.
  const py::Code& code = *frame.code;
  py::ValueVec pos(frame.locals.begin(), frame.locals.begin() + code.argcount);
  std::vector<std::pair<std::string, Value>> kw;
  for (int i = 0; i < code.kwonlyargcount; ++i)
    kw.emplace_back(code.varnames[size_t(code.argcount + i)], frame.locals[size_t(code.argcount + i)]);
  size_t slot = size_t(code.argcount + code.kwonlyargcount);
  if (code.has_varargs) {
    const Value& rest = frame.locals[slot++];
    if (!rest.is(ObjKind::Tuple)) return std::nullopt;
    for (const Value& v : rest.as<py::Tuple>()->items) pos.push_back(v);
  }
  if (code.has_varkw) {
    const Value& rest = frame.locals[slot++];
    if (!rest.is(ObjKind::Dict)) return std::nullopt;
    for (const auto& e : rest.as<py::Dict>()->entries) {
      if (!e.key.is(ObjKind::Str)) return std::nullopt;
      kw.emplace_back(e.key.as<py::Str>()->s, e.value);
    }
  }
  OpNode op;
  for (const Value& v : pos) {
    Arg a;
    ArgTemplate t;
    if (!to_arg(v, a, t)) return std::nullopt;
    op.node.args.push_back(std::move(a));
    op.step.args.push_back(std::move(t));
  }
  for (const auto& [k, v] : kw) {
    Arg a;
    ArgTemplate t;
    if (!to_arg(v, a, t)) return std::nullopt;
    op.node.kwargs.emplace_back(k, std::move(a));
    op.step.kwargs.emplace_back(k, std::move(t));
  }
  // The body runs on fakes of the tensor arguments, one per graph value (the
  // same tensor passed twice is one operand: `q is k` holds in the body too).
  std::vector<NodeId> operand_ids;
  std::function<void(const ArgTemplate&)> collect = [&](const ArgTemplate& t) {
    if (t.kind == ArgTemplate::Kind::Node) {
      if (std::find(operand_ids.begin(), operand_ids.end(), t.node) == operand_ids.end()) operand_ids.push_back(t.node);
      return;
    }
    for (const ArgTemplate& x : t.items) collect(x);
  };
  for (const ArgTemplate& t : op.step.args) collect(t);
  for (const auto& [k, t] : op.step.kwargs) collect(t);
  std::function<Value(const Value&, const ArgTemplate&, const py::ValueVec&)> substitute =
      [&](const Value& v, const ArgTemplate& t, const py::ValueVec& fakes) -> Value {
    switch (t.kind) {
      case ArgTemplate::Kind::Node:
        return fakes[size_t(std::find(operand_ids.begin(), operand_ids.end(), t.node) - operand_ids.begin())];
      case ArgTemplate::Kind::Tuple:
      case ArgTemplate::Kind::List: {
        const py::ValueVec& items = v.is(ObjKind::Tuple) ? v.as<py::Tuple>()->items : v.as<py::List>()->items;
        py::ValueVec out;
        for (size_t i = 0; i < items.size(); ++i) out.push_back(substitute(items[i], t.items[i], fakes));
        if (v.is(ObjKind::List)) return py::list_value(std::move(out));
        return Value(py::make<py::Tuple>(std::move(out), v.as<py::Tuple>()->is_size));
      }
      default: return v;  // constants; a dict or slice holding a tensor is refused below
    }
  };
  std::function<bool(const ArgTemplate&, bool)> plain = [&](const ArgTemplate& t, bool in_other) {
    if (t.kind == ArgTemplate::Kind::Node) return !in_other;
    const bool other = in_other || t.kind == ArgTemplate::Kind::Dict || t.kind == ArgTemplate::Kind::Slice;
    return std::all_of(t.items.begin(), t.items.end(), [&](const ArgTemplate& x) { return plain(x, other); });
  };
  for (const ArgTemplate& t : op.step.args)
    if (!plain(t, false)) return std::nullopt;
  for (const auto& [k, t] : op.step.kwargs)
    if (!plain(t, false)) return std::nullopt;
  Branch body;
  try {
    body = trace_branch(
        [&](const py::ValueVec& fakes) {
          py::ValueVec args;
          for (size_t i = 0; i < pos.size(); ++i) args.push_back(substitute(pos[i], op.step.args[i], fakes));
          std::vector<std::pair<std::string, Value>> kwargs;
          for (size_t i = 0; i < kw.size(); ++i) kwargs.emplace_back(kw[i].first, substitute(kw[i].second, op.step.kwargs[i].second, fakes));
          return vm_.call(Value(static_cast<py::Object*>(frame.func)), std::move(args), std::move(kwargs));
        },
        "body", operand_ids, false, frame.func);
  } catch (py::GraphBreakSignal&) {
    return std::nullopt;
  } catch (py::PyError& e) {
    if (e.uncatchable()) throw;
    return std::nullopt;
  }
  // One tensor is the node's value; a tuple or list of tensors is taken apart
  // by getitem nodes, as Dynamo wraps it. An element holding no tensor (None,
  // einops.pack's list of shapes) is a constant of the trace: the code after
  // the call reads the value itself, as Dynamo's graph does.
  const Value& result = body.structure;
  const bool single = result.is(ObjKind::Tensor);
  const bool is_list = result.is(ObjKind::List);
  if (!single && !result.is_none() && !result.is(ObjKind::Tuple) && !is_list) return std::nullopt;
  const py::ValueVec items = result.is(ObjKind::Tuple) ? result.as<py::Tuple>()->items
                             : is_list                 ? result.as<py::List>()->items
                                                       : py::ValueVec{};
  std::function<bool(const Value&)> holds_tensor = [&](const Value& v) {
    if (v.is(ObjKind::Tensor)) return true;
    if (v.is(ObjKind::Tuple) || v.is(ObjKind::List)) {
      const py::ValueVec& xs = v.is(ObjKind::Tuple) ? v.as<py::Tuple>()->items : v.as<py::List>()->items;
      return std::any_of(xs.begin(), xs.end(), holds_tensor);
    }
    return !(v.is_none() || v.is_int() || v.is_float() || v.is_bool() || v.is(ObjKind::Str));
  };
  for (const Value& v : items)
    if (!v.is(ObjKind::Tensor) && holds_tensor(v)) return std::nullopt;
  op.node.op = OpKind::CallFunction;
  op.node.target = target;
  op.step.kind = GraphStep::Kind::PyFunction;
  op.step.function = Value(static_cast<py::Object*>(frame.func));
  op.step.grad_enabled = vm_.grad_enabled;
  op.step.autocast = torchapi::autocast_state();
  op.node.name = namer_.create_name(last_part(target));
  op.node.meta.stack = user_stack();
  op.node.meta.scope = module_scope();
  const NodeId id = NodeId(ops_.size());
  op.step.node = id;
  if (single) {
    const auto* like = result.as<py::TensorObj>();
    Ref<py::TensorObj> out = make_fake(Tensor::meta_strided(like->t.sizes(), like->t.strides(), like->t.dtype()), id);
    out->requires_grad = like->requires_grad;
    out->device = like->device;
    op.node.meta.val = val_of(Value(out));
    ops_.push_back(std::move(op));
    return Value(out);
  }
  std::vector<Val> vals;
  py::ValueVec outs;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is(ObjKind::Tensor)) {
      vals.push_back(Val{});
      outs.push_back(items[i]);
      continue;
    }
    const auto* like = items[i].as<py::TensorObj>();
    Ref<py::TensorObj> obj = make_item_fake(like, id, int(i), like->requires_grad);
    vals.push_back(val_of(Value(obj)));
    outs.push_back(Value(obj));
  }
  op.node.meta.val = result.is_none() ? Val{} : Val::tuple(std::move(vals));
  ops_.push_back(std::move(op));
  for (const Value& r : outs)
    if (r.is(ObjKind::Tensor)) resolve(r.as<py::TensorObj>());
  if (result.is_none()) return Value();
  return is_list ? py::list_value(std::move(outs)) : Value(py::make<py::Tuple>(std::move(outs)));
}

// A call of a function in torch._dynamo.config.reorderable_logging_functions
// whose arguments are tensors or constants (Dynamo's DebuggingVariable, without
// keyword arguments): instead of breaking the graph it is kept, to run after
// the graph. The frame goes on as if it had returned None.
bool RegionTracer::defer_logging_call(TracedFrame& tf, const py::Instr& in) {
  py::Frame& f = *tf.frame;
  const size_t argc = size_t(in.arg), n = f.stack.size();
  if (n < argc + 1 || tf.stack.size() != n) return false;
  const Value& fn = f.stack[n - argc - 1];
  if (!fn.is(ObjKind::Function) && !(fn.is(ObjKind::Builtin) && !fn.as<py::Builtin>()->has_self)) return false;
  py::Ref<py::Module> config = vm_.module("torch._dynamo.config");
  const Value* set = config ? config->dict->find_str("reorderable_logging_functions") : nullptr;
  // The set is Python code over a dict (core/python/sets.cpp): its dict is read
  // directly, as running __contains__ here would be traced as part of the region.
  const Value* items = set && set->is(ObjKind::Instance) ? set->as<py::Instance>()->dict->find_str("_d") : nullptr;
  if (!items || !items->is(ObjKind::Dict) || !items->as<py::Dict>()->find(fn)) return false;
  py::ValueVec args(f.stack.end() - std::ptrdiff_t(argc), f.stack.end());
  for (const Value& a : args)
    if (!a.is(ObjKind::Tensor) && !is_scalar_constant(a)) return false;
  deferred_.push_back({fn, std::move(args)});
  f.stack.resize(n - argc - 1);
  f.stack.push_back(Value());
  tf.stack.resize(n - argc - 1);
  tf.stack.push_back(ShadowEntry{});
  ++f.pc;
  return true;
}

// ---- stepping ----

void RegionTracer::init_root(TracedFrame& tf) {
  const py::Frame& f = *tf.frame;
  tf.user_code = !is_library(f.code);
  tf.locals.resize(f.locals.size());
  for (size_t i = 0; i < f.locals.size(); ++i)
    if (!py::is_unbound(f.locals[i])) tf.locals[i] = Source::local(f.code->varnames[i], int(i));
  // Captured values are the frame's state too: a closure's constants and
  // modules are guarded and lifted like locals, so another closure of the same
  // code does not reuse this one's graph.
  tf.cells.resize(f.cells.size());
  for (size_t i = 0; i < f.cells.size(); ++i)
    if (f.cells[i]->bound) tf.cells[i] = Source::cell(cell_name(*f.code, i), int(i));
  tf.stack.resize(f.stack.size());
  for (size_t i = 0; i < f.stack.size(); ++i) {
    tf.stack[i].src = Source::stack(int(i));
    on_pushed(tf, i);  // a resume point's stack holds values made eagerly at the break
  }
}

// getattr(obj, "name") reads obj.name: that is the result's source, so a
// parameter reached that way can be lifted and guarded. With a default the
// result may be the default, which has no such source.
SourcePtr RegionTracer::getattr_source(const TracedFrame& tf, const py::Instr& in) const {
  if (in.op != Op::Call || in.arg != 2) return nullptr;
  const py::Frame& f = *tf.frame;
  const size_t n = f.stack.size(), argc = size_t(in.arg);
  if (n < argc + 1 || tf.stack.size() != n) return nullptr;
  const Value& callee = f.stack[n - argc - 1];
  if (!callee.is(ObjKind::Builtin) || callee.as<py::Builtin>()->has_self || callee.as<py::Builtin>()->name != "getattr")
    return nullptr;
  const Value& name = f.stack[n - argc + 1];
  const SourcePtr& base = tf.stack[n - argc].src;
  if (!base || !name.is(ObjKind::Str)) return nullptr;
  return attr_source(f.stack[n - argc], base, name.as<py::Str>()->s);
}

void RegionTracer::note_global_read(const Value& v, const SourcePtr& src) {
  const std::string name = src->str();
  if (!name.starts_with("G[")) return;
  for (const GlobalRead& r : out_.global_reads)
    if (r.name == name) return;
  GlobalRead r;
  r.name = name;
  r.inputs_before = phs_.size();
  if (v.is(ObjKind::Module)) {
    r.create_fn = "MODULE_MATCH";
    r.type_name = "module";
    r.repr = vm_.repr_of(v);
  } else if (v.is(ObjKind::Builtin) && !v.as<py::Builtin>()->has_self) {
    // torch's callables print as PyTorch's objects do: F.relu is a Python function there.
    // torch's other callables (torch._dynamo.graph_break) are Python functions there too.
    const std::string& qualified = v.as<py::Builtin>()->name;
    const torchapi::Callable* c = torchapi::find(qualified);
    r.repr = c ? c->python_repr : vm_.repr_of(v);
    const bool function = c ? r.repr.starts_with("<function") : qualified.starts_with("torch.");
    r.create_fn = function ? "CLOSURE_MATCH" : "BUILTIN_MATCH";
    r.type_name = function ? "function" : "builtin_function_or_method";
  } else {
    return;
  }
  out_.global_reads.push_back(std::move(r));
}

bool RegionTracer::step(TracedFrame& tf, Value& result) {
  py::Frame& f = *tf.frame;
  const py::Instr in = f.code->code[size_t(f.pc)];
  // Dynamo speculates a checkpoint at the root frame's empty-stack instructions
  // once its graph holds more than one call (is_non_empty_graph); a refusal it
  // cannot resume from rolls back to it, and without one skips the frame. On
  // the H200: an embedding, a Linear or `x * 2` before an LSTM call gives no
  // graph; a Linear then a multiply, or a two-op helper, gives one.
  if (frames_.size() == 1 && f.stack.empty() && ops_.size() > 1) root_checkpoint_ = true;
  const size_t before = f.stack.size();
  Value key;  // BinarySubscr's key, read before the step pops it
  if (in.op == Op::BinarySubscr || in.op == Op::LoadAttr) key = f.stack.back();  // LoadAttr: the object
  ShadowEntry top_before = tf.stack.empty() ? ShadowEntry{} : tf.stack.back();
  consume_dynamic_scalars(tf, in);
  SourcePtr get_result_source;  // dict.get(k) of a present key: the value's source is d[k]
  consume_dicts(tf, in, get_result_source);
  if (!get_result_source) get_result_source = getattr_source(tf, in);
  if (in.op == Op::Call && !is_subgraph_ && defer_logging_call(tf, in)) {
    pending_scalars_.clear();
    return false;
  }
  bool done = vm_.step(f, result);
  pending_scalars_.clear();
  if (done) return true;
  if (get_result_source && in.op == Op::Call && !tf.stack.empty()) {
    // The generic path below pops the call's operands and pushes the result; name the result.
    const size_t after_call = f.stack.size();
    tf.stack.resize(before - std::min(before, stack_pops(in)));
    while (tf.stack.size() + 1 < after_call) tf.stack.push_back(ShadowEntry{});
    tf.stack.push_back(shadow(get_result_source));
    on_pushed(tf, tf.stack.size() - 1);
    return false;
  }
  const size_t after = f.stack.size();
  auto& sh = tf.stack;
  switch (in.op) {
    case Op::LoadFast:
      sh.push_back(tf.has_arg0 && in.arg == 0 ? tf.arg0 : shadow(tf.locals[size_t(in.arg)]));
      on_pushed(tf, after - 1);
      return false;
    case Op::LoadGlobal: {
      const std::string& n = f.code->names[size_t(in.arg)];
      SourcePtr src;
      if (frames_.front()->frame->globals.get() == f.globals.get() && f.globals->find_str(n)) src = Source::global(n);
      if (src) note_global_read(f.stack.back(), src);
      sh.push_back(shadow(src));
      on_pushed(tf, after - 1);
      return false;
    }
    case Op::LoadAttr:
      sh.back() = shadow(top_before.src && !is_tensor_metadata(key, f.code->names[size_t(in.arg)])
                             ? attr_source(key, top_before.src, f.code->names[size_t(in.arg)])
                             : nullptr);
      if (key.is(ObjKind::Module) && sh.back().src) note_global_read(f.stack.back(), sh.back().src);
      on_pushed(tf, after - 1);
      return false;
    case Op::BinarySubscr: {
      SourcePtr base = sh[sh.size() - 2].src;
      sh.resize(sh.size() - 2);
      SourcePtr src = base && (key.is_int() || key.is(ObjKind::Str)) ? Source::item(base, key) : nullptr;
      sh.push_back(shadow(src));
      on_pushed(tf, after - 1);
      return false;
    }
    case Op::StoreFast:
      tf.locals[size_t(in.arg)] = top_before.src;
      sh.pop_back();
      rename_on_store(tf, f.locals[size_t(in.arg)], f.code->varnames[size_t(in.arg)]);
      return false;
    case Op::DeleteFast:
      tf.locals[size_t(in.arg)] = nullptr;
      return false;
    case Op::LoadDeref:
      sh.push_back(shadow(size_t(in.arg) < tf.cells.size() ? tf.cells[size_t(in.arg)] : nullptr));
      on_pushed(tf, after - 1);
      return false;
    case Op::StoreDeref:
      if (size_t(in.arg) < tf.cells.size()) tf.cells[size_t(in.arg)] = top_before.src;
      sh.pop_back();
      return false;
    case Op::DupTop: sh.push_back(sh.back()); return false;
    case Op::DupTopTwo: {
      ShadowEntry a = sh[sh.size() - 2], b = sh.back();
      sh.push_back(a);
      sh.push_back(b);
      return false;
    }
    case Op::RotTwo: std::swap(sh[sh.size() - 1], sh[sh.size() - 2]); return false;
    case Op::RotThree: std::rotate(sh.end() - 3, sh.end() - 1, sh.end()); return false;
    case Op::RotFour: std::rotate(sh.end() - 4, sh.end() - 1, sh.end()); return false;
    case Op::GetIter:
      sh.back() = ShadowEntry{nullptr, top_before.src, 0};
      return false;
    case Op::ForIter:
      if (after == before + 1) {
        ShadowEntry& it = sh.back();
        SourcePtr src = it.iter_base ? Source::item(it.iter_base, Value(it.iter_pos)) : nullptr;
        ++it.iter_pos;
        sh.push_back(shadow(src));
        on_pushed(tf, after - 1);
      } else {
        sh.pop_back();
      }
      return false;
    case Op::JumpIfFalseOrPop:
    case Op::JumpIfTrueOrPop:
      if (after < before) sh.pop_back();
      return false;
    case Op::UnpackSequence: {
      sh.pop_back();
      for (size_t i = size_t(in.arg); i-- > 0;) {
        sh.push_back(shadow(top_before.src ? Source::item(top_before.src, Value(int64_t(i))) : nullptr));
        on_pushed(tf, sh.size() - 1);
      }
      return false;
    }
    default: break;
  }
  size_t pops = stack_pops(in);
  sh.resize(before - std::min(before, pops));
  while (sh.size() < after) {
    sh.push_back(ShadowEntry{});
    on_pushed(tf, sh.size() - 1);
  }
  return false;
}

// torch.nn.RNN/GRU/LSTM's forward: Dynamo 2.11 (allow_rnn off) refuses to
// wrap these modules and cannot resume after the refusal.
bool is_rnn_forward(const py::Code& code) {
  return code.filename == "torch/nn/modules.py" &&
         (code.qualname == "RNN.forward" || code.qualname == "GRU.forward" || code.qualname == "LSTM.forward");
}

void RegionTracer::refuse_rnn(const py::Frame& frame) {
  // Dynamo refuses when it wraps the module. Read by the root frame (an
  // attribute, a global, a local passed on), that is an instruction it cannot
  // resume after; read inside an inlined call (a submodule's forward), the
  // break lands on the root frame's call and the rest of the frame resumes.
  // The module still on the root frame's stack means the root read it.
  bool read_by_root = frames_.size() <= 1 || frame.locals.empty() || !frame.locals[0].is_obj();
  if (!read_by_root)
    for (const Value& v : frames_.front()->frame->stack)
      if (v.is_obj() && v.obj() == frame.locals[0].obj()) read_by_root = true;
  unresumable_ = read_by_root;
  py::BreakInfo info;
  info.reason = "Attempted to wrap RNN, GRU, or LSTM";
  info.explanation =
      "  Explanation: Dynamo does not support RNN, GRU, or LSTM.\n"
      "  Hint: Set torch._dynamo.config.allow_rnn=True to enable experimental support for RNN, GRU, and LSTM in "
      "Dynamo\n"
      "  Hint: It may be possible to write Dynamo tracing rules for this code. Please report an issue to PyTorch if "
      "you encounter this graph break often and it is causing performance issues.\n\n"
      "  Developer debug context: " + (frame.locals.empty() ? std::string() : vm_.repr_of(frame.locals[0])) + "\n";
  throw py::GraphBreakSignal{info};
}

void RegionTracer::init_inlined(TracedFrame& tf, py::Frame& frame) {
  tf.frame = &frame;
  tf.user_code = !is_library(frame.code);
  tf.locals.resize(frame.locals.size());
  for (size_t i = 0; i < frame.locals.size(); ++i) tf.locals[i] = source_of(frame.locals[i]);
  // An inlined closure's free variables are reached through the function, when
  // the region knows where the function came from (self.mlpf, a local lambda).
  tf.cells.resize(frame.cells.size());
  const size_t ncell = frame.code->cellvars.size();
  SourcePtr fn_src = frame.func ? source_of(Value(static_cast<py::Object*>(frame.func))) : nullptr;
  for (size_t i = 0; i < frame.cells.size(); ++i) {
    if (!frame.cells[i]->bound) continue;
    tf.cells[i] = i >= ncell && fn_src ? Source::closure_cell(fn_src, int(i - ncell)) : source_of(frame.cells[i]->value);
  }
}

// Kiln's sparse tensors are Python objects of torch/sparse/__init__.py;
// Dynamo 2.11 refuses to wrap a sparse tensor and cannot resume either.
void RegionTracer::refuse_sparse() {
  unresumable_ = true;
  py::BreakInfo info;
  info.reason = "Attempted to wrap sparse Tensor";
  info.explanation =
      "  Explanation: torch.compile does not support sparse Tensors\n"
      "  Hint: Sparse tensor operations are not yet fully supported in torch.compile with fullgraph=True. Consider "
      "using fullgraph=False to allow graph breaks, or move sparse tensor creation outside the compiled region.\n\n"
      "  Developer debug context: \n";
  throw py::GraphBreakSignal{info};
}

Value RegionTracer::run_inlined(py::Frame& frame) {
  if (frame.func && frame.func == in_graph_root_) {
    in_graph_root_ = nullptr;
  } else if (const std::string* target = in_graph_target(frame.func)) {
    if (std::optional<Value> r = trace_in_graph_call(frame, *target)) return *r;
  }
  if (is_rnn_forward(*frame.code)) refuse_rnn(frame);
  if (frame.code->filename == "torch/sparse/__init__.py") refuse_sparse();
  TracedFrame tf;
  init_inlined(tf, frame);
  return run_traced(tf);
}

// Steps tf's frame (an inlined call's, or a generator's up to its next Yield) until it returns.
Value RegionTracer::run_traced(TracedFrame& tf) {
  py::Frame& frame = *tf.frame;
  frames_.push_back(&tf);
  frame.parent = vm_.current_frame;
  vm_.current_frame = &frame;
  struct Restore {
    RegionTracer* t;
    py::VM& vm;
    py::Frame& f;
    ~Restore() {
      t->frames_.pop_back();
      vm.current_frame = f.parent;
    }
  } restore{this, vm_, frame};
  if (frames_.size() > 64) {
    py::BreakInfo info;
    info.reason = "inlining depth exceeded";
    throw py::GraphBreakSignal{info};
  }
  Value result;
  try {
    while (!step(tf, result)) {
    }
  } catch (py::GraphBreakSignal&) {
    note_break_stack();
    throw;
  } catch (py::PyError& e) {
    if (e.uncatchable() || !in_try_block()) throw;
    note_break_stack();
    throw exception_break(e);
  }
  return result;
}

// ---- generator expressions ----

bool RegionTracer::generator_made(py::VM&, const Value& gen, py::Frame& frame) {
  // Made by the root frame outside a transaction (a region that starts between
  // the LoadConst and the call), a generator could not be undone: it breaks.
  if (!frame.code->is_genexp || (!txn_ && frames_.size() < 2)) return false;
  auto g = std::make_unique<TracedGenerator>();
  g->gen = gen;
  g->frame = &frame;
  g->tf = std::make_unique<TracedFrame>();
  init_inlined(*g->tf, frame);
  // The maker's shadow is as it was before its Call: the argument is on top.
  const TracedFrame& maker = *frames_.back();
  // Its free variables are the maker's cells, with the maker's sources.
  for (size_t i = frame.code->cellvars.size(); i < frame.cells.size(); ++i)
    for (size_t j = 0; j < maker.frame->cells.size() && j < maker.cells.size(); ++j)
      if (maker.frame->cells[j].get() == frame.cells[i].get() && maker.cells[j]) g->tf->cells[i] = maker.cells[j];
  const py::Instr& call = maker.frame->code->code[size_t(maker.frame->pc)];
  if (call.op == Op::Call && call.arg == 1 && !maker.stack.empty() && !frame.locals.empty()) {
    g->tf->has_arg0 = true;
    g->tf->arg0 = maker.stack.back();
    // Elements are item sources of the iterable only for a fresh iterator.
    const Value& it = frame.locals[0];
    if (!it.is_obj() || it.obj()->serial < epoch_) g->tf->arg0.iter_base = nullptr;
    g->tf->arg0.iter_pos = 0;
  }
  generators_.push_back(std::move(g));
  return true;
}

bool RegionTracer::traces_generator(const py::Frame& frame) const {
  const TracedGenerator* g = find_generator(frame);
  return g && !g->escaped;
}

Value RegionTracer::resume_generator(py::VM&, py::Frame& frame) {
  TracedGenerator* g = find_generator(frame);
  KILN_CHECK(g && !g->escaped, "resuming a generator the region does not trace");
  return run_traced(*g->tf);
}

// An iterator made before the transaction cannot be put back: advancing one
// inside it breaks (and the transaction's rewind makes the generator eager).
void RegionTracer::note_iteration(py::VM&, const Value& iterator) {
  if (!txn_ || !iterator.is_obj() || iterator.obj()->serial >= txn_->serial) return;
  if (!iterator.is(ObjKind::Iterator) && !iterator.is(ObjKind::Instance)) return;
  py::BreakInfo info;
  info.reason = "generator expression advances an iterator made before it";
  info.explanation = "  Explanation: Kiln's capture cannot undo that iterator's steps; the generator runs eagerly.\n";
  throw py::GraphBreakSignal{info};
}

void RegionTracer::maybe_open_transaction(TracedFrame& root, size_t nops, size_t nphs, bool grad_before) {
  if (txn_) return;
  const py::Frame& f = *root.frame;
  const py::Instr& in = f.code->code[size_t(f.pc)];
  if (in.op != Op::LoadConst) return;
  const py::Const& c = f.code->consts[size_t(in.arg)];
  if (c.kind != py::Const::Kind::Code || !c.code->is_genexp || eager_genexps_.count(f.pc)) return;
  Transaction t;
  t.pc = f.pc;
  // The function takes the place of its closure tuple, when it has one, below the code.
  const py::Instr& make = f.code->code[size_t(f.pc) + 1];
  t.depth = f.stack.size() - (make.op == Op::MakeFunction && (make.arg & 8) ? 1 : 0);
  t.serial = py::next_object_serial();
  t.stack = f.stack;
  t.locals = f.locals;
  for (const auto& cell : f.cells) t.cells.emplace_back(cell->value, cell->bound);
  t.shadow = root;
  t.nops = nops;
  t.nphs = nphs;
  t.nguards = out_.guards.size();
  t.ngenerators = generators_.size();
  t.grad_before = grad_before;
  t.autocast_before = torchapi::autocast_state();
  t.reusable = out_.reusable;
  t.not_reusable_why = out_.not_reusable_why;
  t.guarded = guarded_;
  t.untyped = untyped_;
  t.dict_length_pending = dict_length_pending_;
  t.next_symbol = next_symbol_;
  t.next_cond = next_cond_;
  t.next_function = next_function_;
  txn_ = std::move(t);
}

void RegionTracer::after_root_step(TracedFrame& root) {
  if (txn_ && root.frame->stack.size() <= txn_->depth && root.frame->pc != txn_->pc) txn_.reset();
  if (!txn_) settle_generators();
}

void RegionTracer::settle_generators() {
  for (auto it = generators_.begin(); it != generators_.end();) {
    if ((*it)->escaped) {
      ++it;
    } else if ((*it)->gen.obj()->refs == 1) {
      it = generators_.erase(it);  // nothing else holds it: its frame goes with it
    } else {
      (*it)->escaped = true;
      ++it;
    }
  }
}

void RegionTracer::rewind_transaction(TracedFrame& root) {
  Transaction t = std::move(*txn_);
  txn_.reset();
  vm_.grad_enabled = t.grad_before;
  torchapi::autocast_state() = t.autocast_before;
  undo_root_step();
  truncate(t.nops, t.nphs);
  for (size_t i = t.nguards; i < out_.guards.size(); ++i) guarded_.erase(out_.guards[i].text());
  out_.guards.resize(t.nguards);
  guarded_ = std::move(t.guarded);
  untyped_ = std::move(t.untyped);
  dict_length_pending_ = std::move(t.dict_length_pending);
  next_symbol_ = t.next_symbol;
  next_cond_ = t.next_cond;
  next_function_ = t.next_function;
  out_.reusable = t.reusable;
  out_.not_reusable_why = std::move(t.not_reusable_why);
  break_stack_.clear();
  while (generators_.size() > t.ngenerators) generators_.pop_back();
  py::Frame& f = *root.frame;
  f.pc = t.pc;
  f.stack = std::move(t.stack);
  f.locals = std::move(t.locals);
  for (size_t i = 0; i < f.cells.size() && i < t.cells.size(); ++i) {
    f.cells[i]->value = std::move(t.cells[i].first);
    f.cells[i]->bound = t.cells[i].second;
  }
  root = std::move(t.shadow);
  eager_genexps_.insert(t.pc);
}

StateTemplate RegionTracer::make_template(const Value& v, const SourcePtr& src, const std::vector<py::TensorObj*>& outputs) {
  StateTemplate t;
  if (py::is_unbound(v)) {
    t.kind = StateTemplate::Kind::Unbound;
    return t;
  }
  if (v.is(ObjKind::Tensor)) {
    auto it = std::find(outputs.begin(), outputs.end(), v.as<py::TensorObj>());
    if (it != outputs.end()) {
      t.kind = StateTemplate::Kind::Output;
      t.output = int(it - outputs.begin());
      return t;
    }
  }
  SourcePtr s = src ? src : source_of(v);
  if (s && (!v.is_obj() || v.obj()->serial < epoch_ || v.is(ObjKind::Tensor))) {
    t.kind = StateTemplate::Kind::Source;
    t.source = s;
    return t;
  }
  if (is_scalar_constant(v) || v.is(ObjKind::DType) || v.is(ObjKind::Device) || v.is(ObjKind::Range)) {
    t.value = v;  // immutable: the same object serves every replay
    return t;
  }
  if (v.is(ObjKind::Tuple) || v.is(ObjKind::List)) {
    t.kind = v.is(ObjKind::Tuple) ? StateTemplate::Kind::Tuple : StateTemplate::Kind::List;
    t.value = v;  // keeps is_size for tuples
    for (const Value& x : v.is(ObjKind::Tuple) ? v.as<py::Tuple>()->items : v.as<py::List>()->items)
      t.items.push_back(make_template(x, nullptr, outputs));
    return t;
  }
  if (v.is(ObjKind::BoundMethod) || (v.is(ObjKind::Builtin) && v.as<py::Builtin>()->has_self)) {
    // A method bound in the region to a value the template can rebuild: bind it again.
    t.kind = StateTemplate::Kind::Bound;
    t.value = v;
    t.items.push_back(make_template(v.is(ObjKind::BoundMethod) ? v.as<py::BoundMethod>()->self : v.as<py::Builtin>()->self, nullptr, outputs));
    return t;
  }
  if (v.is(ObjKind::Dict)) {
    t.kind = StateTemplate::Kind::Dict;
    v.as<py::Dict>()->for_each([&](const Value& k, const Value& x) {
      t.items.push_back(make_template(k, nullptr, outputs));
      t.items.push_back(make_template(x, nullptr, outputs));
    });
    return t;
  }
  if (v.is(ObjKind::Instance) && v.as<py::Instance>()->cls->module == "torch.return_types") {
    t.kind = StateTemplate::Kind::NamedTuple;
    t.value = Value(v.as<py::Instance>()->cls);
    v.as<py::Instance>()->dict->for_each([&](const Value& k, const Value& x) {
      t.fields.push_back(k);
      t.items.push_back(make_template(x, nullptr, outputs));
    });
    return t;
  }
  if (v.is_obj() && v.obj()->serial < epoch_ && !v.is(ObjKind::Iterator)) {
    t.value = v;  // an object from before the region, reached without a source: the same object again
    return t;
  }
  if (out_.reusable) {
    out_.reusable = false;
    out_.not_reusable_why = "the state after the region holds a " + py::type_name(v) + " made inside it";
  }
  return t;
}

size_t RegionTracer::drop_unused_getitems(std::vector<NodeId>& outs, size_t count) {
  std::vector<int> users(ops_.size(), 0);
  auto add_uses = [&](const OpNode& op, int delta) {
    auto use = [&](NodeId id) {
      if (id >= 0) users[size_t(id)] += delta;
    };
    for (const Arg& a : op.node.args) for_each_node_ref(a, use);
    for (const auto& kv : op.node.kwargs) for_each_node_ref(kv.second, use);
  };
  for (const OpNode& op : ops_) add_uses(op, 1);
  for (NodeId id : outs)
    if (id >= 0) ++users[size_t(id)];
  // Last to first, so a getitem read only by a dropped one goes too.
  std::vector<bool> drop(ops_.size(), false);
  bool any = false;
  for (size_t i = ops_.size(); i-- > 0;) {
    const OpNode& op = ops_[i];
    if (users[i] || op.node.op != OpKind::CallFunction || op.node.target != "operator.getitem") continue;
    drop[i] = any = true;
    add_uses(op, -1);
  }
  if (!any) return 0;
  std::vector<NodeId> renumber(ops_.size(), kNoNode);
  size_t kept = 0, dropped = 0;
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (!drop[i]) renumber[i] = NodeId(kept++);
    else if (i < count) ++dropped;
  }
  auto fix = [&](NodeId id) { return id >= 0 ? renumber[size_t(id)] : id; };
  std::vector<OpNode> left;
  left.reserve(kept);
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (drop[i]) continue;
    ops_[i].renumber(fix);
    left.push_back(std::move(ops_[i]));
  }
  ops_ = std::move(left);
  for (auto& entry : subgraphs_) entry.first = size_t(renumber[entry.first]);
  for (NodeId& id : outs) id = fix(id);
  // The fakes of dropped nodes are dead: nothing after the region reads them.
  for (auto& f : fakes_)
    if (auto* info = static_cast<FakeInfo*>(f->fake.get()); info && info->owner == this) {
      info->node = fix(info->node);
      info->parent = fix(info->parent);
    }
  return dropped;
}

void RegionTracer::finalize(py::Frame& frame, const Value* returned) {
  // Graph outputs: every fake still referenced outside the tracer, those in the
  // frame first (return value, stack, locals), as Dynamo orders them.
  std::vector<py::TensorObj*> outputs;
  std::unordered_set<py::TensorObj*> seen;
  std::function<void(const Value&, int)> walk = [&](const Value& v, int depth) {
    if (depth > 8 || !v.is_obj()) return;
    if (v.is(ObjKind::Tensor)) {
      auto* t = v.as<py::TensorObj>();
      if (t->fake && seen.insert(t).second) outputs.push_back(t);
    } else if (v.is(ObjKind::Tuple) || v.is(ObjKind::List) || v.is(ObjKind::Instance)) {
      for (const Value& x : result_items(v)) walk(x, depth + 1);
    } else if (v.is(ObjKind::Dict)) {
      v.as<py::Dict>()->for_each([&](const Value&, const Value& x) { walk(x, depth + 1); });
    } else if (v.is(ObjKind::BoundMethod)) {
      walk(v.as<py::BoundMethod>()->self, depth + 1);  // x.item, left on the stack by a break at its call
    } else if (v.is(ObjKind::Builtin) && v.as<py::Builtin>()->has_self) {
      walk(v.as<py::Builtin>()->self, depth + 1);
    }
  };
  if (returned) {
    // A returned frame's locals are dead, as in Python: only the return value is live.
    frame.stack.clear();
    for (Value& v : frame.locals) v = py::unbound();
    walk(*returned, 0);
  }
  for (const Value& v : frame.stack) walk(v, 0);
  for (const Value& v : frame.locals) walk(v, 0);
  // Tensors a deferred print reads are graph outputs, as Dynamo reconstructs them after the graph.
  for (const Deferred& d : deferred_)
    for (const Value& v : d.args) walk(v, 0);
  // Then tensors stored on objects from before the region, as Dynamo's side
  // effects follow the stack among its graph outputs.
  for (const Mutated& m : mutated_) {
    if (m.dict) m.dict->for_each([&](const Value&, const Value& x) { walk(x, 1); });
    else for (const Value& x : m.list->items) walk(x, 1);
  }
  for (auto& f : fakes_) {
    if (!f->fake || seen.count(f.get())) continue;
    bool is_placeholder = static_cast<FakeInfo*>(f->fake.get())->node < -1;
    if (!is_placeholder && f->refs > 1) {
      seen.insert(f.get());
      outputs.push_back(f.get());
      if (out_.reusable) {
        out_.reusable = false;
        auto* info = static_cast<FakeInfo*>(f->fake.get());
        std::string node = info->node >= 0 && size_t(info->node) < ops_.size() ? ops_[size_t(info->node)].node.name : "an element of a multi-output op";
        out_.not_reusable_why = "a tensor made in the region (" + node + ") is kept outside the frame";
      }
    }
  }
  // Placeholders of module parameters and buffers first, as Dynamo lifts them.
  std::vector<size_t> order;
  for (size_t p = 0; p < phs_.size(); ++p)
    if (phs_[p].source->is_module_state()) order.push_back(p);
  for (size_t p = 0; p < phs_.size(); ++p)
    if (!phs_[p].source->is_module_state()) order.push_back(p);
  std::vector<NodeId> ph_final(phs_.size());
  for (size_t i = 0; i < order.size(); ++i) ph_final[order[i]] = NodeId(i);
  const NodeId nph = NodeId(phs_.size());
  // Outputs first: an element of a multi-output op never used inside the region
  // gets its getitem node here, so place_ops places every op.
  const size_t ops_in_region = ops_.size();
  std::vector<NodeId> output_ids;
  for (py::TensorObj* t : outputs) output_ids.push_back(resolve(t));
  Graph& g = out_.graph;
  for (size_t p : order) {
    g.add(phs_[p].node);
    out_.inputs.push_back(phs_[p].source);
    out_.input_values.push_back(phs_[p].real);
  }
  const size_t dropped = drop_unused_getitems(output_ids, ops_in_region);
  place_ops(g, [&ph_final, nph](NodeId id) { return id < -1 ? ph_final[size_t(-id - 2)] : id + nph; }, output_ids);
  out_.op_count = int(ops_in_region - dropped);

  // Run the graph once on the real inputs and turn the fakes real in place.
  // The graph runs under the grad mode the region was entered with, as a cache
  // hit does (a break inside a no_grad block left grad mode off here).
  GradModeRestore entry_grad_mode(vm_);
  for (const Guard& g : out_.guards)
    if (g.kind == Guard::Kind::GradMode) vm_.grad_enabled = g.grad_mode;
  std::vector<Value> real = settings_.runner ? settings_.runner(out_, out_.input_values) : run_graph(vm_, out_, out_.input_values);
  for (size_t i = 0; i < outputs.size(); ++i) {
    KILN_CHECK(i < real.size() && real[i].is(ObjKind::Tensor), "region output ", i, " of ", outputs.size(),
               " ran to a ", i < real.size() ? py::type_name(real[i]) : std::string("missing value"), ", not a tensor");
    auto* r = real[i].as<py::TensorObj>();
    outputs[i]->t = r->t;
    // The real run recorded the autograd history the program's backward() walks.
    outputs[i]->grad_node = r->grad_node;
    outputs[i]->output_nr = r->output_nr;
    if (r->grad_node) outputs[i]->grad_fn = r->grad_fn;
    // A leaf made in the region (torch.ones(3, requires_grad=True)): the
    // program holds this object, so gradients reaching the real run's leaf
    // must land in its .grad.
    if (!r->grad_node) py::autograd::move_leaf(r, outputs[i]);
    outputs[i]->fake.reset();
  }
  for (auto& f : fakes_) f->fake.reset();  // dead ones too, so nothing fake outlives the region
  // The deferred logging calls, after the graph, with the values it computed.
  make_side_effects(outputs);
  for (const Deferred& d : deferred_) {
    DeferredCall call;
    call.fn = d.fn;
    for (const Value& v : d.args) call.args.push_back(make_template(v, nullptr, outputs));
    out_.deferred_calls.push_back(std::move(call));
  }
  for (const Deferred& d : deferred_) vm_.call(d.fn, d.args);

  if (out_.reusable && returned) {
    // The frame is done: only the return value needs rebuilding on a cache hit.
    out_.return_value = make_template(*returned, nullptr, outputs);
  } else if (out_.reusable) {
    TracedFrame& root = *frames_.front();
    for (size_t i = 0; i < frame.stack.size(); ++i)
      out_.stack_after.push_back(make_template(frame.stack[i], i < root.stack.size() ? root.stack[i].src : nullptr, outputs));
    for (size_t i = 0; i < frame.locals.size(); ++i)
      out_.locals_after.push_back(make_template(frame.locals[i], root.locals[i], outputs));
    if (returned) out_.return_value = make_template(*returned, nullptr, outputs);
  }
}

SourcePtr RegionTracer::side_effect_target(const Mutated& m, Value& target) const {
  target = m.obj;
  if (SourcePtr s = source_of(m.obj)) return s;
  if (!m.dict) return nullptr;
  for (const auto& [obj, src] : sources_) {
    if (obj->kind != ObjKind::Instance) continue;
    auto* inst = static_cast<const py::Instance*>(obj);
    if (inst->dict.get() == m.dict) {
      target = Value(const_cast<py::Object*>(obj));
      return src;
    }
    SourcePtr found;
    inst->dict->for_each([&](const Value& k, const Value& v) {
      if (!found && k.is(ObjKind::Str) && v.is_obj() && v.obj() == m.dict) found = Source::attr(src, py::as_str(k));
    });
    if (found) return found;
  }
  return nullptr;
}

void RegionTracer::make_side_effects(const std::vector<py::TensorObj*>& outputs) {
  for (const Mutated& m : mutated_) {
    SideEffect e;
    e.is_list = m.list != nullptr;
    bool changed = false;
    if (m.dict) {
      std::unordered_map<Value, Value, py::ValueHash, py::ValueKeyEq> before;
      for (const auto& x : m.entries)
        if (x.live) before.emplace(x.key, x.value);
      m.dict->for_each([&](const Value& k, const Value& v) {
        auto it = before.find(k);
        if (it != before.end()) {
          const bool same = it->second.same(v);
          before.erase(it);
          if (same) return;
        }
        e.sets.push_back(make_template(k, nullptr, outputs));
        e.sets.push_back(make_template(v, nullptr, outputs));
        changed = true;
      });
      for (const auto& x : m.entries) {
        if (!x.live || !before.count(x.key)) continue;
        e.removed.push_back(make_template(x.key, nullptr, outputs));
        changed = true;
      }
    } else {
      const py::ValueVec& now = m.list->items;
      changed = now.size() != m.items.size();
      for (size_t i = 0; i < now.size(); ++i) {
        int kept = -1;
        if (i < m.items.size() && m.items[i].same(now[i])) kept = int(i);
        for (size_t j = 0; kept < 0 && j < m.items.size(); ++j)
          if (m.items[j].same(now[i])) kept = int(j);
        changed |= kept != int(i);
        e.kept.push_back(kept);
        e.items.push_back(kept >= 0 ? StateTemplate{} : make_template(now[i], nullptr, outputs));
      }
    }
    if (!changed) continue;
    Value target;
    SourcePtr src = side_effect_target(m, target);
    // Without a source a cache hit could change another object than the one
    // the region changed; the list's old items are taken by index, so its length
    // must be guarded (reading a list through its source guards it).
    if (!src || (e.is_list && !guarded_.count("len(" + src->str() + ") == " + std::to_string(m.items.size())))) {
      if (out_.reusable) {
        out_.reusable = false;
        out_.not_reusable_why = "the region changes a " + py::type_name(m.obj) + " that existed before it";
      }
      continue;
    }
    e.target.kind = StateTemplate::Kind::Source;
    e.target.source = src;
    e.target.value = target;
    out_.side_effects.push_back(std::move(e));
  }
}

// ---- entry points ----

RegionResult trace_region(py::VM& vm, py::Frame& frame, const TraceSettings& settings) {
  RegionResult out;
  RegionTracer tracer(vm, settings, out);
  TracedFrame root;
  root.frame = &frame;
  tracer.init_root(root);
  Guard grad;
  grad.kind = Guard::Kind::GradMode;
  grad.source = Source::global("torch");
  grad.grad_mode = vm.grad_enabled;
  grad.autocast = torchapi::autocast_state();
  out.guards.push_back(grad);

  RegionTracer* saved_active = active_tracer;
  py::Tracer* saved = vm.tracer;
  active_tracer = &tracer;
  vm.tracer = &tracer;
  struct Restore {
    py::VM& vm;
    py::Tracer* saved;
    RegionTracer* saved_active;
    ~Restore() {
      vm.tracer = saved;
      active_tracer = saved_active;
    }
  } restore{vm, saved, saved_active};

  Value result;
  bool returned = false;
  tracer.enter_open_autocast_blocks(frame);
  tracer.push_root(&root);
  py::Frame* outer = vm.current_frame;
  frame.parent = outer;
  vm.current_frame = &frame;
  try {
    size_t nops = 0, nphs = 0;
    bool grad_before = vm.grad_enabled;
    torchapi::AutocastState autocast_before = torchapi::autocast_state();
    for (;;) {
      // A transaction's root steps are undone together: they share one start.
      if (!tracer.in_transaction()) {
        nops = tracer.op_count();
        nphs = tracer.placeholder_count();
        // A break inside an inlined call undoes the call: a no_grad block it
        // entered before breaking must not leave grad mode off.
        grad_before = vm.grad_enabled;
        autocast_before = torchapi::autocast_state();
        tracer.begin_root_step();
        tracer.maybe_open_transaction(root, nops, nphs, grad_before);
      }
      try {
        try {
          // torch.compile(nn.LSTM(...)): the module's own forward is the root.
          if (nops == 0 && nphs == 0 && is_rnn_forward(*frame.code)) tracer.refuse_rnn(frame);
          if (tracer.step(root, result)) {
            returned = true;
            break;
          }
        } catch (py::PyError& e) {
          if (e.uncatchable() || !tracer.in_try_block()) throw;
          throw RegionTracer::exception_break(e);
        }
        tracer.after_root_step(root);
      } catch (py::GraphBreakSignal& s) {
        if (tracer.in_transaction()) {
          tracer.rewind_transaction(root);
          continue;
        }
        vm.grad_enabled = grad_before;
        torchapi::autocast_state() = autocast_before;
        tracer.undo_root_step();
        tracer.note_break_stack();
        tracer.truncate(nops, nphs);
        tracer.settle_generators();
        out.break_info = s.info;
        break;
      }
    }
  } catch (...) {
    vm.current_frame = outer;
    throw;
  }
  tracer.end_transaction();  // a frame that returns its generator expression
  if (out.break_info) tracer.exit_open_autocast_blocks(frame);
  vm.current_frame = outer;
  vm.tracer = saved;
  active_tracer = saved_active;
  out.returned = returned;
  out.grad_enabled_after = vm.grad_enabled;
  out.autocast_after = torchapi::autocast_state();
  out.exit_pc = frame.pc;
  out.unresumable = tracer.unresumable();
  out.frame_skipped = out.unresumable && !tracer.root_checkpoint();
  if (out.break_info) {
    const py::Instr& in = frame.code->code[size_t(frame.pc)];
    out.restarted = out.break_info->kind != py::BreakKind::DataDependentJump && out.break_info->kind != py::BreakKind::DynamicShape;
    // Dynamo's explain names a break it cannot resume from by the step that failed.
    out.break_record.reason = out.unresumable ? "step_unsupported" : out.break_info->reason;
    out.break_record.explanation = out.unresumable ? "" : out.break_info->explanation;
    out.break_record.stack = tracer.break_stack();
    // Dynamo reports a break where it happened: the innermost user frame.
    if (!out.break_record.stack.empty()) {
      const StackFrame& inner = out.break_record.stack.back();
      out.break_record.file = inner.file;
      out.break_record.line = inner.line;
      out.break_record.function = inner.function;
      out.break_record.code = inner.code;
    } else {
      out.break_record.file = frame.code->filename;
      out.break_record.line = in.line;
      out.break_record.function = frame.code->name;
      out.break_record.code = py::source_line(*frame.code, in.line);
    }
  }
  tracer.finalize(frame, returned ? &result : nullptr);
  order_guards(out.guards);
  if (returned) frame.stack.push_back(result);  // the engine pops it as the frame's return value
  return out;
}

bool RegionResult::changes_grad_mode() const {
  for (const Guard& g : guards)
    if (g.kind == Guard::Kind::GradMode)
      for (const GraphStep& s : steps)
        if (s.grad_enabled != g.grad_mode) return true;
  return false;
}

Value traced_cond(py::VM& vm, const py::CallArgs& a) {
  if (!active_tracer || vm.tracer != active_tracer) {
    py::BreakInfo info;
    info.reason = "Unsupported call: torch.cond";
    info.explanation = "  Explanation: torch.cond is traced only by torch.compile's capture.\n";
    vm.tracer->graph_break(vm, info);
  }
  return active_tracer->trace_cond(a[0], a[1], a[2], result_items(a[3]));
}

Value traced_function_apply(py::VM& vm, const py::CallArgs& a) {
  if (!active_tracer || vm.tracer != active_tracer) {
    py::BreakInfo info;
    info.reason = "Unsupported call: torch.autograd.Function.apply";
    info.explanation = "  Explanation: a custom autograd Function is traced only by torch.compile's capture.\n";
    vm.tracer->graph_break(vm, info);
  }
  return active_tracer->trace_function_apply(a[0], a[1], a[2]);
}

Value traced_autocast_marker(py::VM& vm, const py::CallArgs& a) {
  // Another tracer (a cond branch's is active_tracer too) or none: no node.
  if (active_tracer && vm.tracer == active_tracer) active_tracer->autocast_marker(vm.truth(a[1]), a[0]);
  return Value();
}

bool inline_traced_call(py::VM& vm, py::Frame& frame, Value& result) {
  if (!active_tracer || vm.tracer != active_tracer) return false;
  result = active_tracer->run_inlined(frame);
  return true;
}

}  // namespace kiln::capture
