// Every decomposition against its eager kernel (random inputs, float32 and
// float64), the decompose pass on the op corpus against PyTorch's outputs, and
// the core set's closure and documentation.
//
// Tolerances (|got - want| <= atol + rtol * |want|): float32 atol 1e-5,
// rtol 1e-5; float64 atol 1e-10, rtol 1e-10; integer and bool outputs exact,
// NaN matches NaN. A decomposition computes in the input dtype where the
// kernel may accumulate in double, hence more than one ulp in float32. Corpus
// cases use the conformance tolerances (core/corpus/conformance.h).
#include <QtTest>
#include <fstream>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "compiler/decomp/decomp.h"
#include "compiler/decomp/decompose.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/emitter.h"
#include "core/corpus/conformance.h"
#include "core/corpus/corpus.h"
#include "core/trace/reader.h"
#include "core/trace/trace.h"
#include "decomp_samples.h"
#include "test_support.h"

using namespace kiln;
using namespace kiln::pipeline;
using namespace kiln::decomp;
namespace ds = kiln::test::decomp;

namespace {

// The only ops both core and in the table: adaptive average pooling, decomposed when it is a mean (its
// backward when the windows tile the input), and bilinear grid sampling.
const std::set<std::string> kConditional = {"aten::_adaptive_avg_pool2d.default", "aten::_adaptive_avg_pool3d.default",
                                            "aten::adaptive_avg_pool1d.default", "aten::grid_sampler_2d.default",
                                            "aten::_adaptive_avg_pool2d_backward.default",
                                            "aten::_adaptive_avg_pool3d_backward.default",
                                            "aten::_scaled_dot_product_efficient_attention_backward.default"};

Tensor random_tensor(const ds::In& in, DType ft, std::mt19937_64& rng) {
  const size_t n = size_t(shape_numel(in.shape));
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  if (in.kind == ds::Kind::Int || in.kind == ds::Kind::Target) {
    std::vector<int64_t> v(n);
    for (int64_t& x : v) {
      x = std::uniform_int_distribution<int64_t>(in.lo, in.hi - 1)(rng);
      if (in.kind == ds::Kind::Target && uniform(0, 1) < 0.2) x = -100;
    }
    return Tensor::from_vector(v, in.shape);
  }
  if (in.kind == ds::Kind::Bool) {
    std::vector<double> v(n);
    for (double& x : v) x = uniform(0, 1) < 0.5 ? 1 : 0;
    return Tensor::from_vector(v, in.shape).to(DType::Bool);
  }
  std::vector<double> v(n);
  const double inf = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < n; ++i) {
    switch (in.kind) {
      case ds::Kind::Wide:
        v[i] = uniform(-8, 8);
        break;
      case ds::Kind::Pos:
        v[i] = uniform(0.5, 2);
        break;
      case ds::Kind::Unit:
        v[i] = uniform(0.05, 0.95);
        break;
      case ds::Kind::Zeros:
        v[i] = uniform(0, 1) < 0.25 ? 0.0 : uniform(-2, 2);
        break;
      case ds::Kind::Special: {
        const double specials[] = {std::nan(""), inf, -inf};
        v[i] = uniform(0, 1) < 0.3 ? specials[i % 3] : uniform(-2, 2);
        break;
      }
      default:
        v[i] = uniform(-2, 2);
    }
  }
  return Tensor::from_vector(v, in.shape).to(ft);
}

Value make_value(const ds::In& in, DType ft, std::mt19937_64& rng) {
  switch (in.kind) {
    case ds::Kind::None:
      return Value();
    case ds::Kind::Const:
      return in.value;
    case ds::Kind::List: {
      ValueList items;
      for (const ds::In& x : in.items) items.push_back(make_value(x, ft, rng));
      return Value(std::move(items));
    }
    default:
      return Value(random_tensor(in, ft, rng));
  }
}

struct Call {
  ValueList args;
  KwargList kwargs;
};

// Fresh values each time: some kernels write to their inputs (batch norm's running statistics).
Call make_call(const ds::Sample& s, DType ft, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Call c;
  for (const ds::In& a : s.args) c.args.push_back(make_value(a, ft, rng));
  for (const auto& [k, a] : s.kwargs) c.kwargs.emplace_back(k, make_value(a, ft, rng));
  return c;
}

// Tensors become emitter inputs (through `input`), tensor lists EArg lists, the rest constants.
template <class Input>
EArg to_earg(const Value& v, Input&& input) {
  if (v.is_tensor()) return input(v.to_tensor());
  if (v.is_list()) {
    const ValueList& items = v.to_list();
    bool tensors = std::any_of(items.begin(), items.end(), [](const Value& x) { return x.is_tensor(); });
    if (tensors) {
      std::vector<Var> vars;
      for (const Value& x : items) vars.push_back(x.is_none() ? Var{} : input(x.to_tensor()));
      return EArg::list(vars);
    }
  }
  return EArg(v);
}
template <class Input>
std::pair<std::vector<EArg>, EKwargs> to_eargs(const Call& c, Input&& input) {
  std::vector<EArg> args;
  for (const Value& v : c.args) args.push_back(to_earg(v, input));
  EKwargs kwargs;
  for (const auto& [k, v] : c.kwargs) kwargs.emplace_back(k, to_earg(v, input));
  return {args, kwargs};
}

// Passes calls on, noting each op.
class Recorder : public Emitter {
 public:
  explicit Recorder(Emitter& inner) : inner_(inner) {}
  std::vector<Var> call(std::string_view op, const std::vector<EArg>& args, const EKwargs& kwargs = {}) override {
    ops.insert(std::string(op));
    return inner_.call(op, args, kwargs);
  }
  const Tensor& tensor(Var v) const override { return inner_.tensor(v); }
  std::set<std::string> ops;

 private:
  Emitter& inner_;
};

std::string compare_one(const Tensor& got, const Tensor& want, bool values) {
  if (got.dtype() != want.dtype())
    return "dtype " + std::string(dtype_name(got.dtype())) + ", want " + std::string(dtype_name(want.dtype()));
  if (got.sizes() != want.sizes()) return "shape " + shape_str(got.sizes()) + ", want " + shape_str(want.sizes());
  if (!values) return "";
  double atol = 0, rtol = 0;
  if (want.dtype() == DType::Float32) atol = rtol = 1e-5;
  if (want.dtype() == DType::Float64) atol = rtol = 1e-10;
  std::vector<double> g = test::values(got), w = test::values(want);
  for (size_t i = 0; i < g.size(); ++i) {
    bool same = (std::isnan(g[i]) && std::isnan(w[i])) || g[i] == w[i] ||
                std::fabs(g[i] - w[i]) <= atol + rtol * std::fabs(w[i]);
    if (!same)
      return "element " + std::to_string(i) + ": got " + QString::number(g[i], 'g', 12).toStdString() + ", want " +
             QString::number(w[i], 'g', 12).toStdString();
  }
  return "";
}

std::string compare_all(const std::vector<Tensor>& got, const std::vector<Tensor>& want, bool values) {
  if (got.size() != want.size()) return std::to_string(got.size()) + " outputs, want " + std::to_string(want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    std::string why = compare_one(got[i], want[i], values);
    if (!why.empty()) return "output " + std::to_string(i) + ": " + why;
  }
  return "";
}

std::vector<Tensor> tensors_of(const std::vector<Value>& vs) {
  return flatten_tensors(ValueList(vs.begin(), vs.end()));
}

// Decomposes through DecomposingEmitter over the eager kernels; "" when the numbers agree.
std::string check_eager(const ds::Sample& s, DType ft, uint64_t seed) {
  Call want_call = make_call(s, ft, seed);
  auto want = call_op(s.op, want_call.args, want_call.kwargs);
  if (!want) return "the kernel failed: " + want.status().message();
  EagerEmitter ee;
  Recorder rec(ee);
  DecomposingEmitter de(rec);
  auto [args, kwargs] = to_eargs(make_call(s, ft, seed), [&](const Tensor& t) { return ee.input(t); });
  std::vector<Var> outs;
  try {
    outs = de.call(s.op, args, kwargs);
  } catch (const Error& e) {
    return std::string("eager decomposition failed: ") + e.what();
  }
  if (de.applied() == 0) return "the decomposition declined";
  for (const std::string& op : rec.ops)
    if (!is_core(op)) return "eager decomposition called non-core " + op;
  std::vector<Tensor> got;
  for (Var v : outs)
    if (v.valid()) got.push_back(ee.tensor(v));  // a None output, as flatten_tensors skips the kernel's
  std::string why = compare_all(got, flatten_tensors(*want), s.values);
  return why.empty() ? "" : "eager: " + why;
}

// Builds the one-node graph, decomposes it, checks it is all core and runs it.
std::string check_graph(const ds::Sample& s, DType ft, uint64_t seed) {
  Call c = make_call(s, ft, seed);
  auto want = call_op(s.op, c.args, c.kwargs);
  if (!want) return "the kernel failed: " + want.status().message();
  Graph g;
  GraphEmitter ge(g);
  std::vector<Value> inputs;
  Call fresh = make_call(s, ft, seed);
  auto [args, kwargs] = to_eargs(fresh, [&](const Tensor& t) {
    inputs.emplace_back(t);
    return ge.placeholder("arg" + std::to_string(inputs.size() - 1), t);
  });
  try {
    ge.output(ge.call(s.op, args, kwargs));
  } catch (const Error& e) {
    return std::string("tracing failed: ") + e.what();
  }
  auto dg = decompose(g);
  if (!dg) return "decompose failed: " + dg.status().message();
  std::vector<std::string> left = non_core_targets(*dg);
  if (!left.empty()) return "decomposed graph still calls " + left[0];
  auto got = run_aten_graph(*dg, inputs);
  if (!got) return "running the decomposed graph failed: " + got.status().message();
  std::string why = compare_all(tensors_of(*got), flatten_tensors(*want), s.values);
  return why.empty() ? "" : "graph: " + why;
}

uint64_t seed_of(const std::string& op, size_t index) {
  return std::hash<std::string>()(op) ^ (index * 0x9e3779b97f4a7c15ull);
}

}  // namespace

class TestDecompositions : public QObject {
  Q_OBJECT
 private slots:
  void core_set_is_closed() {
    std::set<std::string> registered;
    for (const OpDef* d : op_registry().all()) registered.insert(d->schema.full_name());
    std::vector<std::string> core = core_ops(), decomposed = decomposed_ops();
    for (const std::string& op : core)
      QVERIFY2(registered.count(op), qPrintable(QString::fromStdString(op + " is core but not registered")));
    for (const std::string& op : decomposed)
      QVERIFY2(registered.count(op),
               qPrintable(QString::fromStdString(op + " has a decomposition but is not registered")));
    for (const std::string& op : registered)
      QVERIFY2(is_core(op) || find_decomposition(op),
               qPrintable(QString::fromStdString(op + " is neither core nor decomposed")));
    std::set<std::string> both;
    for (const std::string& op : decomposed)
      if (is_core(op)) both.insert(op);
    QCOMPARE(both, kConditional);
    QVERIFY(is_core("aten::add.Tensor") && is_core("aten::sin") && !is_core("aten::gelu"));
    QVERIFY(find_decomposition("aten::gelu") && find_decomposition("aten::gelu.default") &&
            !find_decomposition("aten::sin"));
    qInfo("%zu registered overloads: %zu core, %zu with a decomposition", registered.size(), core.size(),
          decomposed.size());
  }

  // docs/core_aten.md lists the core set; the code and the page must not drift apart.
  void core_set_matches_docs() {
    std::ifstream f(std::string(KILN_SOURCE_DIR) + "/docs/core_aten.md");
    QVERIFY2(f, "docs/core_aten.md is missing");
    std::stringstream ss;
    ss << f.rdbuf();
    std::string text = ss.str();
    size_t begin = text.find("## The core set"), end = text.find("\n## ", begin + 1);
    QVERIFY2(begin != std::string::npos, "docs/core_aten.md has no '## The core set' section");
    std::string section = text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    std::set<std::string> documented;
    // ATen ops are listed without their namespace, prims with it (`prims::fma.default`).
    std::regex name(R"(`((?:prims::)?[A-Za-z0-9_]+\.[A-Za-z0-9_]+)`)");
    for (auto it = std::sregex_iterator(section.begin(), section.end(), name); it != std::sregex_iterator(); ++it) {
      std::string op = (*it)[1].str();
      documented.insert(op.find("::") == std::string::npos ? "aten::" + op : op);
    }
    std::vector<std::string> core = core_ops();
    std::set<std::string> coded(core.begin(), core.end());
    for (const std::string& op : coded)
      QVERIFY2(documented.count(op), qPrintable(QString::fromStdString(op + " is not in the docs")));
    for (const std::string& op : documented)
      QVERIFY2(coded.count(op), qPrintable(QString::fromStdString(op + " is documented but not core")));
  }

  void every_decomposition_has_a_sample() {
    std::set<std::string> sampled;
    for (const ds::Sample& s : ds::samples()) {
      QVERIFY2(find_decomposition(s.op),
               qPrintable(QString::fromStdString("sample for " + s.op + ", which has no decomposition")));
      sampled.insert(s.op);
    }
    for (const std::string& op : decomposed_ops())
      QVERIFY2(sampled.count(op), qPrintable(QString::fromStdString(op + " has no sample")));
  }

  void decompositions_match_eager_kernels() {
    std::vector<ds::Sample> all = ds::samples();
    std::vector<std::string> failures;
    int checks = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      const ds::Sample& s = all[i];
      for (DType ft : {DType::Float32, DType::Float64}) {
        uint64_t seed = seed_of(s.op, i);
        std::string why = check_eager(s, ft, seed);
        if (why.empty() && s.graph) why = check_graph(s, ft, seed);
        ++checks;
        if (!why.empty())
          failures.push_back(s.op + " (sample " + std::to_string(i) + ", " + std::string(dtype_name(ft)) + "): " + why);
      }
    }
    for (const std::string& f : failures) qWarning("%s", f.c_str());
    qInfo("%d checks of %zu samples, %zu failed", checks, all.size(), failures.size());
    QVERIFY2(failures.empty(), qPrintable(QString("%1 decomposition checks failed").arg(failures.size())));
  }

  // Ops whose kernels compute 16-bit floats in float32 and round once: the
  // decompositions upcast the same way, so they agree within the conformance
  // tolerance of the 16-bit dtype.
  void sixteen_bit_inputs_compute_in_float32() {
    const std::set<std::string> ops = {"aten::gelu.default",
                                       "aten::mish.default",
                                       "aten::_softmax.default",
                                       "aten::_log_softmax.default",
                                       "aten::native_layer_norm.default",
                                       "aten::native_batch_norm.default",
                                       "aten::native_batch_norm_backward.default",
                                       "aten::var.correction",
                                       "aten::native_group_norm.default",
                                       "aten::_scaled_dot_product_flash_attention_for_cpu.default",
                                       "aten::_scaled_dot_product_efficient_attention.default",
                                       "aten::_scaled_dot_product_efficient_attention_backward.default"};
    std::vector<ds::Sample> all = ds::samples();
    int checks = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      if (!ops.count(all[i].op)) continue;
      for (DType ft : {DType::Float16, DType::BFloat16}) {
        uint64_t seed = seed_of(all[i].op, i);
        Call c = make_call(all[i], ft, seed);
        auto want = call_op(all[i].op, c.args, c.kwargs);
        QVERIFY2(want.ok(), want.ok() ? "" : want.status().message().c_str());
        EagerEmitter ee;
        DecomposingEmitter de(ee);
        auto [args, kwargs] = to_eargs(make_call(all[i], ft, seed), [&](const Tensor& t) { return ee.input(t); });
        std::vector<Var> outs;
        for (Var v : de.call(all[i].op, args, kwargs))
          if (v.valid()) outs.push_back(v);  // None outputs, as flatten_tensors skips them
        std::vector<Tensor> w = flatten_tensors(*want);
        QCOMPARE(outs.size(), w.size());
        for (size_t k = 0; k < outs.size(); ++k) {
          Comparison cmp = compare_tensors(ee.tensor(outs[k]), w[k]);
          QVERIFY2(cmp.ok, qPrintable(QString::fromStdString(all[i].op + " " + std::string(dtype_name(ft)) + ": " +
                                                             cmp.reason)));
        }
        ++checks;
      }
    }
    QVERIFY(checks >= 16);
  }

  // The samples are contiguous; views of permuted tensors take the clone path of reshape and contiguous.
  void permuted_inputs_reshape_through_a_contiguous_clone() {
    Tensor y = test::arange_f32({4, 3, 2}, -1.f, 0.1f);
    Tensor x = test::call1("aten::permute.default", {y, test::ints({2, 1, 0})});  // [2, 3, 4], not contiguous
    Tensor w = test::arange_f32({4, 5}, 0.5f, -0.05f);
    struct Case {
      const char* op;
      ValueList args;
    };
    const std::vector<Case> cases = {{"aten::matmul.default", {x, w}},
                                     {"aten::contiguous.default", {x}},
                                     {"aten::reshape.default", {x, test::ints({6, 4})}},
                                     {"aten::flatten.using_ints", {x}},
                                     {"aten::repeat.default", {x, test::ints({1, 2, 1})}}};
    for (const Case& c : cases) {
      Tensor want = test::call1(c.op, c.args);
      EagerEmitter ee;
      DecomposingEmitter de(ee);
      auto [args, kwargs] = to_eargs(Call{c.args, {}}, [&](const Tensor& t) { return ee.input(t); });
      Tensor got = ee.tensor(de.call(c.op, args, kwargs).at(0));
      std::string why = compare_one(got, want, true);
      QVERIFY2(why.empty(), qPrintable(QString(c.op) + ": " + QString::fromStdString(why)));
      if (std::string(c.op) == "aten::contiguous.default") QVERIFY(got.is_contiguous());
    }
  }

  // Every corpus case whose op has a decomposition, as a one-node graph
  // decomposed and run, against PyTorch's outputs.
  void corpus_cases_through_decomposed_graphs() {
    auto corpus = load_corpus(test::reference_dir() + "/opcorpus");
    QVERIFY2(corpus.ok(), corpus.ok() ? "" : corpus.status().message().c_str());
    int cases = 0;
    std::vector<std::string> failures;
    for (const CorpusCase& c : corpus->cases) {
      if (!find_decomposition(c.op)) continue;
      ++cases;
      Graph g;
      GraphEmitter ge(g);
      std::vector<Value> inputs;
      auto [args, kwargs] = to_eargs(Call{c.args, c.kwargs}, [&](const Tensor& t) {
        inputs.emplace_back(t);
        return ge.placeholder("arg" + std::to_string(inputs.size() - 1), t);
      });
      std::string why;
      try {
        ge.output(ge.call(c.op, args, kwargs));
        auto dg = decompose(g);
        if (!dg) throw Error(dg.status().message());
        std::vector<std::string> left = non_core_targets(*dg);
        if (!left.empty()) throw Error("still calls " + left[0]);
        qInfo("%s %s: %zu call nodes after decomposition", c.id.c_str(), c.op.c_str(),
              count_nodes(*dg, OpKind::CallFunction));
        auto got = run_aten_graph(*dg, inputs);
        if (!got) throw Error(got.status().message());
        std::vector<Tensor> outs = tensors_of(*got);
        if (outs.size() != c.outputs.size()) throw Error(std::to_string(outs.size()) + " outputs");
        for (size_t k = 0; k < outs.size(); ++k) {
          Comparison cmp = compare_tensors(outs[k], c.outputs[k]);
          if (!cmp.ok) throw Error("output " + std::to_string(k) + ": " + cmp.reason);
        }
      } catch (const Error& e) {
        why = e.what();
      }
      if (!why.empty()) failures.push_back(c.id + " " + c.op + ": " + why);
    }
    for (const std::string& f : failures) qWarning("%s", f.c_str());
    qInfo("%d corpus cases with a decomposition, %zu failed", cases, failures.size());
    QVERIFY(cases >= 20);
    QVERIFY2(failures.empty(), qPrintable(QString("%1 corpus cases failed").arg(failures.size())));
  }

  // linear -> gelu(tanh) -> layer_norm -> softmax -> mse_loss against a target,
  // plus a batch-norm'd, upsampled, pooled branch: all core after the pass,
  // the same numbers, and every new node traceable to the node it replaced.
  void composite_chain_is_core_only_with_provenance() {
    Tensor x = test::arange_f32({4, 6}, -1.f, 0.09f), w = test::arange_f32({5, 6}, 0.3f, -0.02f);
    Tensor b = test::arange_f32({5}, 0.1f, 0.05f), target = test::arange_f32({4, 5}, 0.f, 0.01f);
    Tensor img = test::arange_f32({2, 3, 4, 4}, -2.f, 0.04f);
    Graph g;
    GraphEmitter ge(g);
    Var gx = ge.placeholder("x", x), gw = ge.placeholder("w", w), gb = ge.placeholder("b", b);
    Var gt = ge.placeholder("target", target), gi = ge.placeholder("img", img);
    ge.set_origin({StackFrame{"model.py", 7, "forward", "y = F.gelu(self.fc(x))"}}, {});
    Var h = ge.call1("aten::linear.default", {gx, gw, gb});
    h = ge.call1("aten::gelu.default", {h}, {{"approximate", "tanh"}});
    h = ge.call1("aten::layer_norm.default", {h, std::vector<int64_t>{5}});
    h = ge.call1("aten::softmax.int", {h, int64_t(-1)});
    Var loss = ge.call1("aten::mse_loss.default", {h, gt});
    Var bn =
        ge.call("aten::_native_batch_norm_legit.no_stats", {gi, EArg::none(), EArg::none(), true, 0.1, 1e-5}).at(0);
    Var up = ge.call1("aten::upsample_nearest2d.vec", {bn, std::vector<int64_t>{8, 8}, EArg::none()});
    Var pooled = ge.call1("aten::adaptive_avg_pool2d.default", {up, std::vector<int64_t>{1, 1}});
    Var flat = ge.call1("aten::flatten.using_ints", {pooled, int64_t(1)});
    Var lse = ge.call1("aten::logsumexp.default", {flat, std::vector<int64_t>{1}});
    ge.output({loss, lse});

    std::string log;
    int replaced = 0;
    auto dg = decompose(g, &log, &replaced);
    QVERIFY2(dg.ok(), dg.ok() ? "" : dg.status().message().c_str());
    QCOMPARE(replaced, 10);
    QVERIFY2(non_core_targets(*dg).empty(), "the decomposed chain still calls non-core ops");
    QVERIFY2(log.find("gelu (aten::gelu.default) -> ") != std::string::npos, log.c_str());
    QVERIFY(count_nodes(*dg, OpKind::CallFunction) > count_nodes(g, OpKind::CallFunction));

    std::set<std::string> original;
    for (const Node& n : g.nodes) original.insert(n.name);
    for (const Node& n : dg->nodes) {
      if (n.op != OpKind::CallFunction) continue;
      QVERIFY2(n.meta.from.size() == 1 && original.count(n.meta.from[0]),
               qPrintable(QString::fromStdString(n.name + " does not name the node it came from")));
      const Node& src = g[g.find(n.meta.from[0])];
      QCOMPARE(n.meta.stack, src.meta.stack);
    }
    QCOMPARE((*dg)[dg->find("x")].op, OpKind::Placeholder);

    std::vector<Value> inputs{Value(x), Value(w), Value(b), Value(target), Value(img)};
    auto want = run_aten_graph(g, inputs);
    auto got = run_aten_graph(*dg, inputs);
    QVERIFY2(got.ok(), got.ok() ? "" : got.status().message().c_str());
    QVERIFY(want.ok());
    for (size_t i = 0; i < 2; ++i) {
      std::string why = compare_one((*got)[i].to_tensor(), (*want)[i].to_tensor(), true);
      QVERIFY2(why.empty(), why.c_str());
    }
  }

  void a_core_graph_comes_back_unchanged() {
    Graph g;
    GraphEmitter ge(g);
    Var x = ge.placeholder("x", Tensor::meta({2, 3}, DType::Float32));
    ge.output({ge.call1("aten::sin.default", {ge.call1("aten::mul.Tensor", {x, x})})});
    std::string log;
    int replaced = -1;
    auto dg = decompose(g, &log, &replaced);
    QVERIFY(dg.ok());
    QCOMPARE(replaced, 0);
    QCOMPARE(dg->size(), g.size());
    for (size_t i = 0; i < g.size(); ++i) QCOMPARE(dg->nodes[i].name, g.nodes[i].name);
    QVERIFY(log.empty());
  }

  // Nodes the pass does not decompose are copied as they are, names included;
  // a new node that would take a copied node's name gets a suffix instead.
  void untouched_nodes_are_copied_with_their_names() {
    Graph g;
    GraphEmitter ge(g);
    Var a = ge.placeholder("a", Tensor::meta({2, 3}, DType::Float32));
    Var b = ge.placeholder("b", Tensor::meta({3, 4}, DType::Float32));
    Var bias = ge.placeholder("bias", Tensor::meta({4}, DType::Float32));
    Var fused = ge.call1("aten::addmm.default", {bias, a, b});  // becomes mm + add
    Var plain = ge.call1("aten::mm.default", {a, b});           // named "mm", copied
    Node m;                                                     // not ATen: copied too
    m.op = OpKind::CallMethod;
    m.name = "view_1";
    m.target = "view";
    m.args = {Arg::node(ge.node(plain)), Arg::integer(8)};
    NodeId method = g.add(m);
    ge.output({fused, plain});
    g.nodes.back().args[0].items.push_back(Arg::node(method));
    auto dg = decompose(g);
    QVERIFY2(dg.ok(), dg.ok() ? "" : dg.status().message().c_str());
    std::set<std::string> names;
    for (const Node& n : dg->nodes) QVERIFY2(names.insert(n.name).second, n.name.c_str());
    NodeId mm = dg->find("mm");
    QVERIFY(mm != kNoNode);
    QCOMPARE((*dg)[mm].meta.from, std::vector<std::string>{"mm"});
    QCOMPARE((*dg)[dg->find("view_1")].op, OpKind::CallMethod);
    QCOMPARE((*dg)[dg->find("view_1")].args[0].node_id(), mm);
    QCOMPARE(non_core_targets(*dg), std::vector<std::string>{});
  }

  void a_node_without_meta_read_by_a_decomposition_is_an_error_naming_both() {
    Graph g;
    GraphEmitter ge(g);
    Var x = ge.placeholder("x", Tensor::meta({2, 3}, DType::Float32));
    Node odd;
    odd.op = OpKind::CallFunction;
    odd.name = "odd";
    odd.target = "operator.neg";
    odd.args = {Arg::node(ge.node(x))};
    NodeId id = g.add(odd);
    Node gelu;
    gelu.op = OpKind::CallFunction;
    gelu.name = "gelu";
    gelu.target = "aten::gelu.default";
    gelu.args = {Arg::node(id)};
    g.add(gelu);
    auto dg = decompose(g);
    QVERIFY(!dg.ok());
    QVERIFY2(dg.status().message().find("gelu") != std::string::npos &&
                 dg.status().message().find("odd") != std::string::npos,
             dg.status().message().c_str());
  }

  // PyTorch's own AOT graphs of a ResNet-18 training step (the s05 trace):
  // var_mean, addmm and Inductor's max-pool prims decompose, the in-place
  // copy_ epilogue (not a Kiln op) is left as it is, and the backward, core
  // but for the prim that turns max-pool offsets into indices, keeps the rest.
  void resnet18_aot_graphs_from_pytorch() {
    auto trace = trace::open_trace(test::reference_dir() + "/traces/s05_resnet18_train");
    QVERIFY2(trace.ok(), trace.ok() ? "" : trace.status().message().c_str());
    int graphs = 0;
    for (const trace::CompileEntry& entry : trace->entries) {
      for (const char* stage : {"aot_forward_graph", "aot_backward_graph"}) {
        if (!entry.artifact(stage)) continue;
        auto g = trace->graph(entry, stage);
        QVERIFY2(g.ok(), g.ok() ? "" : g.status().message().c_str());
        int replaced = -1;
        auto dg = decompose(**g, nullptr, &replaced);
        QVERIFY2(dg.ok(), dg.ok() ? "" : dg.status().message().c_str());
        std::vector<std::string> left = non_core_targets(*dg);
        for (const std::string& op : left) qInfo("left: %s", op.c_str());
        std::set<std::string> names;
        for (const Node& n : dg->nodes) QVERIFY2(names.insert(n.name).second, n.name.c_str());
        qInfo("%s %s: %zu call nodes, %d decomposed, %zu call nodes after", entry.label.c_str(), stage,
              count_nodes(**g, OpKind::CallFunction), replaced, count_nodes(*dg, OpKind::CallFunction));
        if (std::string(stage) == "aot_forward_graph") {
          // 20 var_mean.correction (batch norm statistics), 1 addmm (fc), 1 max-pool prim
          QCOMPARE(replaced, 22);
          // The running-statistics copy_ is not a Kiln op.
          QCOMPARE(left, std::vector<std::string>{"aten::copy_.default"});
        } else {
          QCOMPARE(replaced, 1);  // _low_memory_max_pool_offsets_to_indices
          QVERIFY(left.empty());
        }
        ++graphs;
      }
    }
    QCOMPARE(graphs, 2);
  }
};

QTEST_GUILESS_MAIN(TestDecompositions)
#include "test_decompositions.moc"
