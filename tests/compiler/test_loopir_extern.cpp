// Extern kernels (mm, bmm, addmm, convolution through OpenBLAS; any other op
// as a fallback through the op registry) and the scheduler's GEMM epilogue
// fusion. Every graph is built with GraphEmitter and checked against
// run_aten_graph three ways: run_loops of the lowered program, run_scheduled
// with the buffer plan applied, and run_extern directly on real tensors.
#include <chrono>
#include <random>

#include "compiler/loopir/extern_call.h"
#include "compiler/loopir/lower.h"
#include "compiler/loopir/print_ir.h"
#include "compiler/pipeline/emitter.h"
#include "compiler/sched/schedule.h"
#include "core/ops/registry.h"
#include "core/util/status.h"
#include "loopir_test_util.h"
#include "test_support.h"

using namespace kiln;
using namespace kiln::loopir;
using namespace kiln::pipeline;
using kiln::test::random_f32;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Lowers, schedules and runs `g` both ways; "" when both agree with the ATen kernels within `tol`.
std::string check(const Graph& g, const std::vector<Tensor>& inputs, Program* lowered = nullptr,
                  sched::ScheduledProgram* scheduled = nullptr, double tol = 1e-4) {
  Program p = lower_to_loops(g);
  std::vector<Tensor> want = test::aten_outputs(g, inputs);
  std::string diff = test::compare_outputs(run_loops(p, inputs), want, tol);
  if (!diff.empty()) return "run_loops vs aten: " + diff + "\n" + print_loop_ir(p);
  sched::ScheduledProgram s = sched::schedule(p);
  diff = test::compare_outputs(sched::run_scheduled(s, inputs), want, tol);
  if (!diff.empty()) return "run_scheduled vs aten: " + diff + "\n" + sched::print_scheduled(s);
  if (lowered) *lowered = std::move(p);
  if (scheduled) *scheduled = std::move(s);
  return {};
}

#define CHECK_EXTERN(g, prog, sched_out, ...)                                        \
  do {                                                                               \
    std::string diff = check(g, std::vector<Tensor>{__VA_ARGS__}, prog, sched_out);   \
    QVERIFY2(diff.empty(), diff.c_str());                                            \
  } while (0)

std::vector<const Kernel*> externs(const Program& p) {
  std::vector<const Kernel*> out;
  for (const Kernel& k : p.kernels)
    if (k.kind == KernelKind::Extern) out.push_back(&k);
  return out;
}

size_t count_kind(const Program& p, KernelKind kind) {
  size_t n = 0;
  for (const Kernel& k : p.kernels) n += k.kind == kind;
  return n;
}

const sched::FusionDecision* find_decision(const sched::ScheduledProgram& s, sched::DecisionKind kind, bool accepted) {
  for (const sched::FusionDecision& d : s.decisions)
    if (d.kind == kind && d.accepted == accepted) return &d;
  return nullptr;
}

// A convolution node through GraphEmitter with explicit parameters.
Var conv(GraphEmitter& e, Var x, Var w, EArg bias, std::vector<int64_t> stride, std::vector<int64_t> pad,
         std::vector<int64_t> dil, int64_t groups, bool transposed = false) {
  std::vector<int64_t> out_pad(stride.size(), 0);
  return e.call1("aten::convolution.default", {x, w, bias, stride, pad, dil, transposed, out_pad, groups});
}

}  // namespace

class TestLoopirExtern : public QObject {
  Q_OBJECT
 private slots:
  void mm_transposed_weight_is_a_view() {
    std::mt19937 rng(1);
    Tensor x = random_f32({5, 7}, rng), w = random_f32({3, 7}, rng);
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x), b = e.placeholder("w", w);
    e.output({e.call1("aten::mm.default", {a, e.call1("aten::t.default", {b})})});
    Program p;
    CHECK_EXTERN(g, &p, nullptr, x, w);
    QCOMPARE(p.kernels.size(), size_t(1));  // the transpose is a strided view: no copy kernel
    QCOMPARE(p.kernels[0].kind, KernelKind::Extern);
    QCOMPARE(p.kernels[0].call->kind, ExternKind::Gemm);
    QVERIFY(!p.kernels[0].body);
    QCOMPARE(extern_inputs(p.kernels[0]), (std::vector<std::string>{"x", "w"}));
    QCOMPARE(extern_outputs(p.kernels[0]), (std::vector<std::string>{"buf0"}));
    std::string text = print_loop_ir(p);
    QVERIFY2(contains(text, "buf0: ExternKernelOut"), text.c_str());
    QVERIFY2(contains(text, "buf0.kernel = extern_kernels.mm(x, reinterpret_tensor(w, (7, 3), (1, 7), 0), out=buf0)"),
             text.c_str());
  }

  void bmm_and_addmm() {
    std::mt19937 rng(2);
    Tensor x = random_f32({4, 3, 6}, rng), y = random_f32({4, 6, 5}, rng);
    Tensor c = random_f32({5}, rng), m1 = random_f32({3, 6}, rng), m2 = random_f32({6, 5}, rng);
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x), b = e.placeholder("y", y), vc = e.placeholder("c", c);
    Var v1 = e.placeholder("m1", m1), v2 = e.placeholder("m2", m2);
    Var bm = e.call1("aten::bmm.default", {a, b});
    Var am = e.call1("aten::addmm.default", {vc, v1, v2}, {{"beta", 0.5}, {"alpha", -2.0}});
    // A permuted bmm operand: still strided, still no copy.
    Var bt = e.call1("aten::bmm.default", {e.call1("aten::permute.default", {b, std::vector<int64_t>{0, 2, 1}}),
                                           e.call1("aten::permute.default", {a, std::vector<int64_t>{0, 2, 1}})});
    e.output({bm, am, bt});
    Program p;
    CHECK_EXTERN(g, &p, nullptr, x, y, c, m1, m2);
    QCOMPARE(externs(p).size(), size_t(3));
    for (const Kernel* k : externs(p)) QCOMPARE(k->call->kind, ExternKind::Gemm);
    QVERIFY(externs(p)[0]->call->gemm.batched);
    QCOMPARE(externs(p)[1]->call->gemm.beta, 0.5);
    QCOMPARE(externs(p)[1]->call->gemm.alpha, -2.0);
    QCOMPARE(count_kind(p, KernelKind::Pointwise), size_t(0));
  }

  void convolutions() {
    std::mt19937 rng(3);
    struct Case {
      std::vector<int64_t> x, w;
      bool bias;
      std::vector<int64_t> stride, pad, dil;
      int64_t groups;
    };
    std::vector<Case> cases = {
        {{2, 4, 9, 8}, {6, 4, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 1},   // im2col
        {{2, 4, 9, 8}, {6, 2, 3, 2}, false, {2, 1}, {0, 1}, {1, 2}, 2},  // stride, pad, dilation, groups
        {{1, 8, 5, 5}, {4, 8, 1, 1}, true, {1, 1}, {0, 0}, {1, 1}, 1},   // 1x1: no im2col
        {{2, 6, 7, 7}, {12, 1, 3, 3}, true, {2, 2}, {1, 1}, {1, 1}, 6},  // depthwise, multiplier 2
        {{2, 3, 11}, {5, 3, 4}, true, {2}, {1}, {1}, 1},                 // conv1d
    };
    for (const Case& c : cases) {
      Tensor x = random_f32(c.x, rng), w = random_f32(c.w, rng), b = random_f32({c.w[0]}, rng);
      Graph g;
      GraphEmitter e(g);
      Var vx = e.placeholder("x", x), vw = e.placeholder("w", w), vb = e.placeholder("b", b);
      EArg bias = c.bias ? EArg(vb) : EArg::none();
      e.output({conv(e, vx, vw, bias, c.stride, c.pad, c.dil, c.groups)});
      Program p;
      CHECK_EXTERN(g, &p, nullptr, x, w, b);
      QCOMPARE(externs(p).size(), size_t(1));
      QCOMPARE(externs(p)[0]->call->kind, ExternKind::Convolution);
      QVERIFY(contains(print_loop_ir(p), "extern_kernels.convolution(x, w"));
    }
    // Transposed convolution runs the eager kernel.
    Tensor x = random_f32({1, 4, 5, 5}, rng), w = random_f32({4, 3, 3, 3}, rng);
    Graph g;
    GraphEmitter e(g);
    Var vx = e.placeholder("x", x), vw = e.placeholder("w", w);
    e.output({conv(e, vx, vw, EArg::none(), {2, 2}, {1, 1}, {1, 1}, 1, true)});
    Program p;
    CHECK_EXTERN(g, &p, nullptr, x, w);
    QCOMPARE(externs(p)[0]->call->kind, ExternKind::Fallback);
    QVERIFY2(contains(print_loop_ir(p), "buf0: FallbackKernel"), print_loop_ir(p).c_str());
    QVERIFY2(contains(print_loop_ir(p), "torch.ops.aten.convolution.default(x, w, None, [2, 2]"),
             print_loop_ir(p).c_str());
  }

  void fallbacks_with_tuple_results() {
    std::mt19937 rng(4);
    Tensor x = random_f32({2, 3, 6, 6}, rng);
    Graph g;
    GraphEmitter e(g);
    Var vx = e.placeholder("x", x);
    Var s = e.call1("aten::sin.default", {vx});
    std::vector<Var> mp = e.call("aten::max_pool2d_with_indices.default",
                                 {s, std::vector<int64_t>{2, 2}, std::vector<int64_t>{2, 2}});
    Var cs = e.call1("aten::cumsum.default", {mp[0], int64_t(3)});
    Var r = e.call1("aten::mul.Scalar", {cs, 2.0});
    e.output({r, mp[1]});  // the int64 indices as a second output
    Program p;
    sched::ScheduledProgram sp;
    CHECK_EXTERN(g, &p, &sp, x);
    QCOMPARE(externs(p).size(), size_t(2));
    const Kernel& pool = *externs(p)[0];
    QCOMPARE(pool.call->kind, ExternKind::Fallback);
    QCOMPARE(extern_outputs(pool).size(), size_t(2));  // values and indices
    QCOMPARE(p.buffer(extern_outputs(pool)[1]).dtype, DType::Int64);
    QCOMPARE(externs(p)[1]->call->target, std::string("aten::cumsum.default"));
    // sin stays materialized: the pool reads it from memory.
    bool refused = false;
    for (const sched::FusionDecision& d : sp.decisions)
      refused |= !d.accepted && contains(d.reason, "read by extern kernel");
    QVERIFY2(refused, sched::print_scheduled(sp).c_str());
    std::string text = sched::print_scheduled(sp);
    QVERIFY2(contains(text, "ExternKernelSchedulerNode(FallbackKernel)"), text.c_str());
    QVERIFY2(contains(text, "torch.ops.aten.max_pool2d_with_indices.default(buf0, [2, 2], [2, 2], out=[buf1, buf2])"),
             text.c_str());
  }

  void linear_bias_epilogue_folds_into_addmm() {
    std::mt19937 rng(5);
    Tensor x = random_f32({6, 8}, rng), w = random_f32({4, 8}, rng), b = random_f32({4}, rng);
    Graph g;
    GraphEmitter e(g);
    Var vx = e.placeholder("x", x), vw = e.placeholder("w", w), vb = e.placeholder("b", b);
    Var mm = e.call1("aten::mm.default", {vx, e.call1("aten::t.default", {vw})});
    Var y = e.call1("aten::add.Tensor", {mm, vb});
    e.output({e.call1("aten::mul.Scalar", {y, 0.5})});
    Program p;
    sched::ScheduledProgram s;
    CHECK_EXTERN(g, &p, &s, x, w, b);
    if (qEnvironmentVariableIsSet("KILN_PRINT_IR")) qInfo("%s", sched::print_scheduled(s).c_str());
    QCOMPARE(p.kernels.size(), size_t(3));
    QCOMPARE(s.program.kernels.size(), size_t(1));  // mm, + bias, * 0.5: one addmm call
    QCOMPARE(s.groups.size(), size_t(1));
    const ExternCall& c = *s.program.kernels[0].call;
    QCOMPARE(c.target, std::string("aten::addmm.default"));
    QCOMPARE(c.gemm.alpha, 0.5);
    QCOMPARE(c.gemm.beta, 0.5);
    QCOMPARE(c.outputs, (std::vector<std::string>{"buf2"}));
    size_t folded = 0;
    for (const sched::FusionDecision& d : s.decisions) folded += d.kind == sched::DecisionKind::Epilogue && d.accepted;
    QCOMPARE(folded, size_t(2));
    std::string text = sched::print_scheduled(s);
    QVERIFY2(contains(text, "+ folded buf1 into extern mm buf0 as addmm: bias b as beta*C"), text.c_str());
    QVERIFY2(contains(text, "extern_kernels.addmm(reinterpret_tensor(b, (6, 4), (0, 1), 0), x, "), text.c_str());
  }

  void relu_of_mm_plus_one() {
    std::mt19937 rng(6);
    Tensor x = random_f32({3, 5}, rng), w = random_f32({5, 4}, rng);
    Graph g;
    GraphEmitter e(g);
    Var vx = e.placeholder("x", x), vw = e.placeholder("w", w);
    Var mm = e.call1("aten::mm.default", {vx, vw});
    e.output({e.call1("aten::relu.default", {e.call1("aten::add.Scalar", {mm, 1.0})})});
    sched::ScheduledProgram s;
    CHECK_EXTERN(g, nullptr, &s, x, w);
    const sched::FusionDecision* took = find_decision(s, sched::DecisionKind::Epilogue, true);
    const sched::FusionDecision* refused = find_decision(s, sched::DecisionKind::Epilogue, false);
    QVERIFY2(took && contains(took->reason, "constant"), sched::print_scheduled(s).c_str());
    QVERIFY2(refused && contains(refused->reason, "relu cannot run inside the BLAS call"),
             sched::print_scheduled(s).c_str());
    QCOMPARE(s.groups.size(), size_t(2));  // addmm, then relu on its own
    QVERIFY(s.program.kernels[0].call->gemm.c_constant.has_value());
    QCOMPARE(*s.program.kernels[0].call->gemm.c_constant, 1.0);
  }

  void epilogue_refusals() {
    std::mt19937 rng(7);
    Tensor x = random_f32({3, 5}, rng), w = random_f32({5, 4}, rng), y = random_f32({3, 4}, rng);
    Graph g;
    GraphEmitter e(g);
    Var vx = e.placeholder("x", x), vw = e.placeholder("w", w), vy = e.placeholder("y", y);
    // Two readers of one product; a product by a tensor; a bias that is itself computed (exp(y)) still folds.
    Var m1 = e.call1("aten::mm.default", {vx, vw});
    Var two = e.call1("aten::add.Tensor", {e.call1("aten::sin.default", {m1}), e.call1("aten::cos.default", {m1})});
    Var m2 = e.call1("aten::mm.default", {vx, vw});
    Var by_tensor = e.call1("aten::mul.Tensor", {m2, vy});
    Var m3 = e.call1("aten::mm.default", {vx, vw});
    Var biased = e.call1("aten::add.Tensor", {e.call1("aten::exp.default", {vy}), m3});
    e.output({two, by_tensor, biased});
    sched::ScheduledProgram s;
    CHECK_EXTERN(g, nullptr, &s, x, w, y);
    std::string text = sched::print_scheduled(s);
    QVERIFY2(contains(text, "- not folded") && contains(text, "2 kernels read the product"), text.c_str());
    QVERIFY2(contains(text, "by a tensor cannot run inside the BLAS call"), text.c_str());
    QVERIFY2(contains(text, "+ folded") && contains(text, "as addmm: bias"), text.c_str());
  }

  // An extern between fused pointwise work: the plan may reuse storage around
  // it but never lets it write what is still read.
  void mixed_graph_with_buffer_reuse() {
    std::mt19937 rng(8);
    Tensor x = random_f32({8, 8}, rng), w = random_f32({8, 8}, rng), k = random_f32({4, 2, 3, 3}, rng);
    Tensor w2 = random_f32({16, 16}, rng);
    Graph g;
    GraphEmitter e(g);
    Var vx = e.placeholder("x", x), vw = e.placeholder("w", w), vk = e.placeholder("k", k);
    Var vw2 = e.placeholder("w2", w2);
    Var a = e.call1("aten::tanh.default", {e.call1("aten::mul.Scalar", {vx, 3.0})});  // fused, materialized for mm
    Var m = e.call1("aten::mm.default", {a, vw});
    Var r = e.call1("aten::relu.default", {m});
    Var m2 = e.call1("aten::mm.default", {r, a});                                     // a still read here
    Var s = e.call1("aten::sigmoid.default", {m2});
    Var img = e.call1("aten::view.default", {s, std::vector<int64_t>{1, 2, 8, 4}});
    Var c = conv(e, img, vk, EArg::none(), {1, 1}, {1, 1}, {1, 1}, 1);
    Var total = e.call1("aten::sum.dim_IntList", {c, std::vector<int64_t>{1}});
    // A [4, 16] product that takes the storage of a freed [8, 8] buffer (same bytes, other sizes).
    Var m3 = e.call1("aten::mm.default", {e.call1("aten::view.default", {s, std::vector<int64_t>{4, 16}}), vw2});
    Var total2 = e.call1("aten::sum.dim_IntList", {m3, std::vector<int64_t>{0}});
    e.output({total, total2});
    Program p;
    sched::ScheduledProgram sp;
    CHECK_EXTERN(g, &p, &sp, x, w, k, w2);
    if (qEnvironmentVariableIsSet("KILN_PRINT_IR")) qInfo("%s", sched::print_scheduled(sp).c_str());
    QCOMPARE(externs(p).size(), size_t(4));
    for (const sched::FusedGroup& grp : sp.groups) {
      bool has_extern = false;
      for (size_t i : grp.kernels) has_extern |= sp.program.kernels[i].kind == KernelKind::Extern;
      QVERIFY2(!has_extern || grp.kernels.size() == 1, sched::print_scheduled(sp).c_str());
    }
    // Unplanned runs agree too, and some buffer was reused around the externs.
    std::vector<Tensor> want = test::aten_outputs(g, {x, w, k, w2});
    QCOMPARE(test::compare_outputs(sched::run_scheduled(sp, {x, w, k, w2}, {false, false}), want, 1e-4),
             std::string());
    bool reshaped_reuse = false;
    for (const sched::BufferAllocation& al : sp.allocations)
      reshaped_reuse |= al.reused && sp.program.buffer(al.buffer).sizes != sp.program.buffer(al.storage).sizes;
    QVERIFY2(reshaped_reuse, sched::print_scheduled(sp).c_str());
    // No extern output shares storage with a buffer its own call reads.
    std::map<std::string, std::string> storage;
    for (const sched::BufferAllocation& al : sp.allocations) storage[al.buffer] = al.storage;
    for (const Kernel& kk : sp.program.kernels) {
      if (kk.kind != KernelKind::Extern) continue;
      for (const std::string& out : extern_outputs(kk))
        for (const std::string& in : extern_inputs(kk))
          QVERIFY2(storage.count(in) == 0 || storage[in] != storage[out], sched::print_scheduled(sp).c_str());
    }
  }

  // run_extern on real tensors, as the compiled runtime calls it.
  void run_extern_on_tensors() {
    std::mt19937 rng(9);
    Tensor x = random_f32({64, 32}, rng), w = random_f32({32, 48}, rng);
    Graph g;
    GraphEmitter e(g);
    Var vx = e.placeholder("x", x), vw = e.placeholder("w", w);
    e.output({e.call1("aten::mm.default", {vx, vw})});
    Program p = lower_to_loops(g);
    Tensor out = Tensor::zeros({64, 48}, DType::Float32);
    std::map<std::string, Tensor> mem = {{"x", x}, {"w", w}, {"buf0", out}};
    run_extern(p, p.kernels[0], [&](const std::string& b) { return mem.at(b); });
    Tensor want = invoke_tensor("aten::mm.default", {x, w});
    QCOMPARE(test::compare_outputs({out}, {want}, 1e-5), std::string());
    if (qEnvironmentVariableIsSet("KILN_BENCH_EXTERN")) {
      Tensor a = random_f32({512, 512}, rng), b = random_f32({512, 512}, rng), c = Tensor::empty({512, 512}, DType::Float32);
      Graph g2;
      GraphEmitter e2(g2);
      Var va = e2.placeholder("x", a), vb = e2.placeholder("w", b);
      e2.output({e2.call1("aten::mm.default", {va, vb})});
      Program p2 = lower_to_loops(g2);
      std::map<std::string, Tensor> m2 = {{"x", a}, {"w", b}, {"buf0", c}};
      auto time = [](auto&& fn) {
        fn();
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < 20; ++i) fn();
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 20;
      };
      double ext = time([&] { run_extern(p2, p2.kernels[0], [&](const std::string& n) { return m2.at(n); }); });
      double eager = time([&] { invoke_tensor("aten::mm.default", {a, b}); });
      qInfo("mm 512x512x512 float32: extern %.3f ms, eager %.3f ms", ext, eager);
    }
  }

  void errors_name_the_node() {
    // A non-tensor result read by a later node stays an error.
    Graph g;
    GraphEmitter e(g);
    Var vx = e.placeholder("x", Tensor::meta({4}, DType::Float32));
    Var cs = e.call1("aten::cumsum.default", {vx, int64_t(0)});
    e.output({e.call1("aten::sin.default", {cs})});
    g[g.find("cumsum")].meta.val = Val::of_scalar(Arg::integer(3));
    try {
      lower_to_loops(g);
      QFAIL("a non-tensor result lowered");
    } catch (const Error& err) {
      std::string msg = err.what();
      QVERIFY2(contains(msg, "'cumsum'") && contains(msg, "non-tensor result"), msg.c_str());
    }
    // An unregistered target has no fallback to call.
    Graph g2;
    GraphEmitter e2(g2);
    Var vy = e2.placeholder("x", Tensor::meta({4}, DType::Float32));
    Var sn = e2.call1("aten::sin.default", {vy});
    e2.output({sn});
    g2[g2.find("sin")].target = "aten::not_an_op.default";
    try {
      lower_to_loops(g2);
      QFAIL("an unregistered op lowered");
    } catch (const Error& err) {
      std::string msg = err.what();
      QVERIFY2(contains(msg, "'sin'") && contains(msg, "not a registered ATen overload"), msg.c_str());
    }
  }
};

QTEST_APPLESS_MAIN(TestLoopirExtern)
#include "test_loopir_extern.moc"
