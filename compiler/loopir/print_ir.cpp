#include "compiler/loopir/print_ir.h"

#include <map>
#include <sstream>

namespace kiln::loopir {
namespace {

std::string list_string(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string torch_dtype(DType d) { return "torch." + std::string(dtype_name(d)); }

std::string constant_string(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  std::string s = os.str();
  if (s.find_first_of(".einf") == std::string::npos) s += ".0";  // Python prints floats with a point
  return s;
}

// Names the body's values as Inductor does (the op, then _1, _2 on repeats)
// and lists its distinct indices in first-use order.
class BodyPrinter {
 public:
  std::string index_name(const IndexRef& e) {
    for (size_t i = 0; i < indices_.size(); ++i)
      if (equal_index(indices_[i], e)) return "index" + std::to_string(i);
    indices_.push_back(e);
    return "index" + std::to_string(indices_.size() - 1);
  }

  std::string fresh(std::string_view base) {
    int& n = uses_[std::string(base)];
    std::string name = n == 0 ? std::string(base) : std::string(base) + "_" + std::to_string(n);
    ++n;
    return name;
  }

  std::string get_index(const IndexRef& e) {
    std::string var = fresh("get_index");
    lines_ << "        " << var << " = self.get_index('" << index_name(e) << "')\n";
    return var;
  }

  // Shared subtrees print once.
  std::string value(const ExprRef& e) {
    if (auto it = printed_.find(e.get()); it != printed_.end()) return it->second;
    std::string name;
    if (e->op == ExprOp::Load) {
      std::string idx = get_index(e->index);
      name = fresh("load");
      lines_ << "        " << name << " = ops.load('" << e->buffer << "', " << idx << ")\n";
    } else if (e->op == ExprOp::Constant) {
      name = fresh("constant");
      lines_ << "        " << name << " = ops.constant(" << constant_string(e->value) << ", " << torch_dtype(e->dtype)
             << ")\n";
    } else {
      std::vector<std::string> args;
      for (const ExprRef& o : e->operands) args.push_back(value(o));
      name = fresh(expr_op_name(e->op));
      lines_ << "        " << name << " = ops." << expr_op_name(e->op) << "(";
      for (size_t i = 0; i < args.size(); ++i) lines_ << (i ? ", " : "") << args[i];
      if (e->op == ExprOp::ToDtype)
        lines_ << ", " << torch_dtype(e->dtype) << ", src_dtype=" << torch_dtype(e->operands[0]->dtype);
      lines_ << ")\n";
    }
    printed_[e.get()] = name;
    return name;
  }

  void emit(const std::string& line) { lines_ << "        " << line << "\n"; }
  std::string lines() const { return lines_.str(); }
  const std::vector<IndexRef>& indices() const { return indices_; }

 private:
  std::vector<IndexRef> indices_;
  std::map<std::string, int> uses_;
  std::map<const Expr*, std::string> printed_;
  std::ostringstream lines_;
};

}  // namespace

std::string layout_string(const Buffer& b) {
  return "FixedLayout('cpu', " + torch_dtype(b.dtype) + ", size=" + list_string(b.sizes) +
         ", stride=" + list_string(b.strides) + (b.offset ? ", offset=" + std::to_string(b.offset) : "") + ")";
}

namespace {

// Inductor's ExternKernelOut for the dedicated BLAS calls, FallbackKernel for
// the eager kernels, each output's layout, then the call itself.
std::string print_extern(const Program& p, const Kernel& k) {
  const ExternCall& c = *k.call;
  std::ostringstream os;
  os << k.output << ": " << (c.kind == ExternKind::Fallback ? "FallbackKernel" : "ExternKernelOut") << "\n";
  os << k.output << ".origins = " << k.origin;
  for (const std::string& e : c.epilogue) os << ", " << e;
  os << "\n";
  for (const std::string& out : c.outputs) os << out << ".layout = " << layout_string(p.buffer(out)) << "\n";
  os << k.output << ".inputs = [";
  for (size_t i = 0; i < c.inputs.size(); ++i) os << (i ? ", " : "") << c.inputs[i];
  os << "]\n";
  os << k.output << ".kernel = " << extern_call_string(p, c) << "\n";
  return os.str();
}

}  // namespace

std::string print_kernel(const Program& p, const Kernel& k) {
  if (k.kind == KernelKind::Extern) return print_extern(p, k);
  const Buffer& out = p.buffer(k.output);
  IndexPrintOptions opt;
  opt.var_prefix = "p";
  BodyPrinter body;
  std::string value = body.value(k.body);
  std::string store;
  if (k.kind == KernelKind::Reduction) {
    std::string red = body.fresh("reduction");
    // Inductor: ops.reduction(dtype, src_dtype, reduction_type, value)
    body.emit(red + " = ops.reduction(" + torch_dtype(out.dtype) + ", " + torch_dtype(k.body->dtype) + ", '" +
              std::string(reduction_type_name(k.reduction)) + "', " + value + ")");
    std::string idx = body.get_index(k.store_index);
    store = body.fresh("store_reduction");
    body.emit(store + " = ops.store_reduction('" + k.output + "', " + idx + ", " + red + ")");
  } else {
    std::string idx = body.get_index(k.store_index);
    store = body.fresh("store");
    body.emit(store + " = ops.store('" + k.output + "', " + idx + ", " + value + ", None)");
  }
  body.emit("return " + store);
  std::string result = body.lines();

  std::ostringstream os;
  os << k.output << ": ComputedBuffer(" << (k.kind == KernelKind::Pointwise ? "Pointwise" : "Reduction") << ")\n";
  os << k.output << ".origins = " << k.origin << "\n";
  os << k.output << ".layout = " << layout_string(out) << "\n";
  os << k.output << ".sizes = (" << list_string(k.ranges) << ", " << list_string(k.reduction_ranges) << ")\n";
  os << "class " << k.output << "_loop_body:\n";
  os << "    var_ranges = {";
  size_t nvars = k.ranges.size() + k.reduction_ranges.size();
  for (size_t i = 0; i < nvars; ++i) {
    int64_t extent = i < k.ranges.size() ? k.ranges[i] : k.reduction_ranges[i - k.ranges.size()];
    os << (i ? ", " : "") << "p" << i << ": " << extent;
  }
  os << "}\n";
  for (size_t i = 0; i < body.indices().size(); ++i)
    os << "    index" << i << " = " << to_string(body.indices()[i], opt) << "\n";
  os << "    def body(self, ops):\n" << result;
  return os.str();
}

std::string print_loop_ir(const Program& p) {
  std::ostringstream os;
  for (const std::string& in : p.inputs) os << in << "_layout = " << layout_string(p.buffer(in)) << "\n";
  if (!p.inputs.empty()) os << "\n\n";
  for (const Kernel& k : p.kernels) os << print_kernel(p, k) << "\n\n";
  os << "outputs = [";
  for (size_t i = 0; i < p.outputs.size(); ++i) os << (i ? ", " : "") << p.outputs[i];
  os << "]\n";
  return os.str();
}

}  // namespace kiln::loopir
