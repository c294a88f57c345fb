// core/python/torch_api: the Python-level torch bindings. Values marked
// "PyTorch 2.11" were measured with that version on the CPU.
#include <QtTest/QtTest>

#include <cmath>
#include <limits>

#include "core/tensor/generator.h"
#include "torch_api_test_util.h"

using namespace kiln;
using namespace kiln::torchapi;
using namespace kiln::torchapi_test;
using kiln::test::values;

class TestTorchApi : public QObject {
  Q_OBJECT

 private slots:
  // docs/torch_api.md is the table itself: regenerate it with
  // `build/tools/kiln-torch-api-table > docs/torch_api.md` when the bindings change.
  void reference_doc_is_current() {
    QFile f(QStringLiteral(KILN_SOURCE_DIR "/docs/torch_api.md"));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString file = QString::fromUtf8(f.readAll());
    const QString table = QString::fromStdString(kiln::torchapi::reference_markdown());
    QVERIFY(table.contains("| `multinomial` | `(Tensor input, int num_samples"));
    QVERIFY2(file == table, "docs/torch_api.md is out of date: run build/tools/kiln-torch-api-table > docs/torch_api.md");
  }
  void registryNamesAndTargets();
  void overloadResolution();
  void argumentErrors();
  void operatorsAndPromotion();
  void inplaceOperators();
  void tensorAttributes();
  void creation();
  void randomMatchesPyTorch();
  void reductionsAndShapes();
  void nnFunctionalValues();
  void batchNormUpdatesRunningStats();
  void dropoutModes();
  void einsumAndFriends();
};

void TestTorchApi::registryNamesAndTargets() {
  const Callable& sin = fn("torch.sin");
  QCOMPARE(sin.graph_target, std::string("torch.sin"));
  QCOMPARE(sin.python_repr, std::string("<built-in method sin of type object at 0x7f0000000000>"));
  QVERIFY(!sin.is_method);
  // Traces of PyTorch 2.11 (s02, s04, s05): F.linear and F.gelu are torch._C._nn builtins,
  // F.relu / F.batch_norm / F.max_pool2d Python functions, F.conv2d is torch.conv2d.
  QCOMPARE(fn("torch.nn.functional.linear").graph_target, std::string("torch._C._nn.linear"));
  QCOMPARE(fn("torch.nn.functional.linear").python_repr, std::string("<built-in function linear>"));
  QCOMPARE(fn("torch.nn.functional.gelu").graph_target, std::string("torch._C._nn.gelu"));
  QCOMPARE(fn("torch.nn.functional.relu").graph_target, std::string("torch.nn.functional.relu"));
  QCOMPARE(fn("torch.nn.functional.relu").python_repr, std::string("<function relu at 0x7f0000000000>"));
  QCOMPARE(fn("torch.nn.functional.batch_norm").graph_target, std::string("torch.nn.functional.batch_norm"));
  QCOMPARE(fn("torch.nn.functional.max_pool2d").graph_target, std::string("torch.nn.functional.max_pool2d"));
  QCOMPARE(fn("torch.nn.functional.adaptive_avg_pool2d").graph_target,
           std::string("torch.nn.functional.adaptive_avg_pool2d"));
  QCOMPARE(fn("torch.nn.functional.conv2d").graph_target, std::string("torch.conv2d"));
  QCOMPARE(fn("torch.flatten").graph_target, std::string("torch.flatten"));
  // Checked against PyTorch 2.11 (torch.fx's _get_qualified_name, str(), Dynamo's trace_rules):
  QCOMPARE(fn("torch.nn.functional.max_pool2d").python_repr,
           std::string("<function boolean_dispatch.<locals>.fn at 0x7f0000000000>"));
  QCOMPARE(fn("torch.nn.functional.logsigmoid").graph_target, std::string("torch._C._nn.log_sigmoid"));
  QCOMPARE(fn("torch.split").graph_target, std::string("torch.functional.split"));
  QCOMPARE(fn("torch.einsum").graph_target, std::string("torch.functional.einsum"));
  QCOMPARE(fn("torch.manual_seed").graph_target, std::string("torch.random.manual_seed"));
  QCOMPARE(fn("torch.special.expit").graph_target, std::string("torch._C._special.special_expit"));
  QCOMPARE(fn("torch.linalg.vector_norm").python_repr, std::string("<built-in function linalg_vector_norm>"));
  // F.pad / F.rms_norm / F.threshold are traced into: the graph shows the builtin they call.
  QVERIFY(fn("torch.nn.functional.pad").dynamo_inlines);
  QCOMPARE(fn("torch.nn.functional.pad").graph_target, std::string("torch._C._nn.pad"));
  QCOMPARE(fn("torch.nn.functional.rms_norm").graph_target, std::string("torch.rms_norm"));
  QCOMPARE(fn("torch.nn.functional.threshold").graph_target, std::string("torch.threshold"));
  QVERIFY(!fn("torch.nn.functional.relu").dynamo_inlines);
  QVERIFY(find("torch.erfinv_") == nullptr && find("torch.sin_") != nullptr);
  QVERIFY(find("Tensor.var_mean") == nullptr && find("torch.var_mean") != nullptr);
  const Callable& view = fn("Tensor.view");
  QVERIFY(view.is_method);
  QCOMPARE(view.graph_target, std::string("view"));
  QVERIFY(fn("Tensor.add_").inplace);
  QVERIFY(fn("torch.relu_").inplace);
  QVERIFY(fn("torch.randn").uses_rng && fn("torch.nn.functional.dropout").uses_rng && !fn("torch.sin").uses_rng);
  QVERIFY(!fn("Tensor.add").inplace);
  QCOMPARE(operator_callable(py::BinaryOpKind::Mul).graph_target, std::string("operator.mul"));
  QCOMPARE(operator_callable(py::BinaryOpKind::Add, true).graph_target, std::string("operator.iadd"));
  QCOMPARE(operator_callable(py::BinaryOpKind::And).python_repr, std::string("<built-in function and_>"));
  QCOMPARE(operator_callable(py::CompareKind::Lt).graph_target, std::string("operator.lt"));
  QCOMPARE(getitem_callable().python_repr, std::string("<built-in function getitem>"));
  QVERIFY(find("torch.no_such_thing") == nullptr);

  auto torch_fns = callables_of("torch");
  QVERIFY(torch_fns.size() > 250);
  for (size_t i = 1; i < torch_fns.size(); ++i) QVERIFY(torch_fns[i - 1]->name < torch_fns[i]->name);
  size_t total = 0;
  for (const std::string& m : modules()) total += callables_of(m).size();
  qInfo("torch callables: %zu in %zu namespaces (torch %zu, Tensor %zu, F %zu)", total, modules().size(),
        torch_fns.size(), callables_of("Tensor").size(), callables_of("torch.nn.functional").size());
  QVERIFY(callables_of("torch.nn.functional").size() > 60);
  QVERIFY(callables_of("Tensor").size() > 250);
  QVERIFY(!callables_of("torch.special").empty());
  QVERIFY(!callables_of("torch.linalg").empty());
}

void TestTorchApi::overloadResolution() {
  Tensor x = F32({1, 2, 3, 4, 5, 6}, {2, 3});
  // torch.sum(x), x.sum(dim=-1, keepdim=True), x.sum((0, 1))
  KILN_COMPARE_VALUES(run1("torch.sum", {x}), {21});
  Tensor s = run1("Tensor.sum", {x}, {{"dim", -1}, {"keepdim", true}});
  QCOMPARE(s.sizes(), (Shape{2, 1}));
  KILN_COMPARE_VALUES(s, {6, 15});
  KILN_COMPARE_VALUES(run1("Tensor.sum", {x, L({0, 1})}), {21});
  QCOMPARE(run1("torch.sum", {x}, {{"dtype", DType::Float64}}).dtype(), DType::Float64);
  // view varargs, tuple and torch.Size forms; permute both ways.
  QCOMPARE(run1("Tensor.view", {x, 3, -1}).sizes(), (Shape{3, 2}));
  QCOMPARE(run1("Tensor.view", {x, L({3, 2})}).sizes(), (Shape{3, 2}));
  QCOMPARE(run1("Tensor.view", {x, 6}).sizes(), (Shape{6}));
  QCOMPARE(run1("Tensor.permute", {x, 1, 0}).sizes(), (Shape{3, 2}));
  QCOMPARE(run1("Tensor.permute", {x, L({1, 0})}).strides(), (Shape{1, 3}));
  QCOMPARE(run1("torch.permute", {x, L({1, 0})}).sizes(), (Shape{3, 2}));
  QVERIFY(contains(error_of("torch.permute", {x, 1, 0}), "takes 2 positional arguments but 3 were given"));
  QCOMPARE(run1("Tensor.reshape", {x, -1}).sizes(), (Shape{6}));
  QCOMPARE(run1("Tensor.expand", {run1("Tensor.view", {x, 2, 1, 3}), 2, 4, 3}).sizes(), (Shape{2, 4, 3}));
  QCOMPARE(run1("Tensor.flatten", {run1("Tensor.view", {x, 1, 2, 3}), 1}).sizes(), (Shape{1, 6}));
  QCOMPARE(run1("Tensor.squeeze", {run1("Tensor.view", {x, 1, 2, 3}), 0}).sizes(), (Shape{2, 3}));
  QCOMPARE(run1("Tensor.unsqueeze", {x, -1}).sizes(), (Shape{2, 3, 1}));
  QCOMPARE(run1("Tensor.repeat", {x, 2, 1}).sizes(), (Shape{4, 3}));
  QCOMPARE(run1("Tensor.transpose", {x, 0, 1}).sizes(), (Shape{3, 2}));

  // max with and without dim: a tensor, or the named tuple (values, indices).
  CallInfo info;
  ValueList m = run("torch.max", {x}, {}, Mode::Eager, &info);
  QCOMPARE(info.kind, ResultKind::Single);
  KILN_COMPARE_VALUES(m[0].to_tensor(), {6});
  m = run("Tensor.max", {x, 1}, {}, Mode::Eager, &info);
  QCOMPARE(info.kind, ResultKind::NamedTuple);
  QCOMPARE(info.type_name, std::string("torch.return_types.max"));
  QCOMPARE(info.fields, (std::vector<std::string>{"values", "indices"}));
  KILN_COMPARE_VALUES(m[0].to_tensor(), {3, 6});
  KILN_COMPARE_VALUES(m[1].to_tensor(), {2, 2});
  QCOMPARE(m[1].to_tensor().dtype(), DType::Int64);
  KILN_COMPARE_VALUES(run1("torch.max", {x, F32({9, 0, 0, 0, 9, 0}, {2, 3})}), {9, 2, 3, 4, 9, 6});
  // var: unbiased (bool) vs dim (int) vs correction
  KILN_COMPARE_VALUES(run1("torch.var", {F32({1, 2, 3, 4}, {4})}), {5.0 / 3});
  KILN_COMPARE_VALUES(run1("Tensor.var", {F32({1, 2, 3, 4}, {4}), false}), {1.25});
  KILN_COMPARE_VALUES(run1("Tensor.var", {F32({1, 2, 3, 4}, {4})}, {{"unbiased", false}}), {1.25});
  KILN_COMPARE_VALUES(run1("Tensor.var", {F32({1, 2, 3, 4}, {4}), 0}, {{"correction", 0}}), {1.25});
  KILN_COMPARE_VALUES(run1("Tensor.std", {x, 1}), {1, 1});
  // clamp by keyword, with tensors, and clamp_min
  KILN_COMPARE_VALUES(run1("Tensor.clamp", {x}, {{"min", 2}, {"max", 5}}), {2, 2, 3, 4, 5, 5});
  KILN_COMPARE_VALUES(run1("torch.clamp", {x, F32({3}, {1})}), {3, 3, 3, 4, 5, 6});
  // pow overloads; where(cond) gives a tuple
  KILN_COMPARE_VALUES(run1("torch.pow", {2, F32({1, 2, 3}, {3})}), {2, 4, 8});
  KILN_COMPARE_VALUES(run1("Tensor.pow", {F32({1, 2, 3}, {3}), 2}), {1, 4, 9});
  ValueList w = run("torch.where", {B({true, false, true}, {3})}, {}, Mode::Eager, &info);
  QCOMPARE(info.kind, ResultKind::Tuple);
  QCOMPARE(w.size(), size_t(1));
  KILN_COMPARE_VALUES(w[0].to_tensor(), {0, 2});
  KILN_COMPARE_VALUES(run1("torch.where", {B({true, false}, {2}), F32({1, 2}, {2}), 0.5}), {1, 0.5});
  // split by size and by sections; chunk
  ValueList parts = run("torch.split", {x, 2}, {{"dim", 1}}, Mode::Eager, &info);
  QCOMPARE(info.kind, ResultKind::Tuple);
  QCOMPARE(parts.size(), size_t(2));
  QCOMPARE(parts[1].to_tensor().sizes(), (Shape{2, 1}));
  parts = run("Tensor.split", {x, L({1, 2}), 1});
  QCOMPARE(parts[1].to_tensor().sizes(), (Shape{2, 2}));
  QCOMPARE(run("Tensor.chunk", {x, 3, 1}).size(), size_t(3));
  QCOMPARE(run("Tensor.unbind", {x}).size(), size_t(2));
  // to(dtype), to(other), to('cpu') returning self, float()
  QCOMPARE(run1("Tensor.to", {x, DType::Float16}).dtype(), DType::Float16);
  QCOMPARE(run1("Tensor.to", {x, I64({1}, {1})}).dtype(), DType::Int64);
  QCOMPARE(run1("Tensor.to", {x, "cpu"}).storage(), x.storage());
  QCOMPARE(run1("Tensor.to", {x}, {{"dtype", DType::Float64}}).dtype(), DType::Float64);
  QCOMPARE(run1("Tensor.float", {x}).storage(), x.storage());
  QCOMPARE(run1("Tensor.long", {x}).dtype(), DType::Int64);
  QCOMPARE(run1("Tensor.type_as", {x, I64({1}, {1})}).dtype(), DType::Int64);
  // size() is a torch.Size, size(d) an int
  ValueList sz = run("Tensor.size", {x}, {}, Mode::Eager, &info);
  QCOMPARE(info.kind, ResultKind::Size);
  QCOMPARE(sz[0].to_int_list(), (std::vector<int64_t>{2, 3}));
  QCOMPARE(run("Tensor.size", {x, -1})[0].to_int(), int64_t(3));
  QCOMPARE(run("Tensor.item", {F32({2.5f}, {})})[0].to_double(), 2.5);
  ValueList tl = run("Tensor.tolist", {I64({1, 2, 3, 4}, {2, 2})}, {}, Mode::Eager, &info);
  QCOMPARE(info.kind, ResultKind::PyList);
  QCOMPARE(tl[0].repr(), std::string("[[1, 2], [3, 4]]"));
  // softmax with dtype=, F.softmax without dim (2-D: dim 1)
  QCOMPARE(run1("Tensor.softmax", {x, -1}, {{"dtype", DType::Float64}}).dtype(), DType::Float64);
  KILN_COMPARE_VALUES(run1("torch.nn.functional.softmax", {F32({0, 0}, {1, 2})}), {0.5, 0.5});
  // in-place methods return self
  Tensor y = x.clone();
  run("Tensor.add_", {y, 1}, {}, Mode::Eager, &info);
  QCOMPARE(info.returns_arg, 0);
  KILN_COMPARE_VALUES(y, {2, 3, 4, 5, 6, 7});
  run("Tensor.mul_", {y, F32({2}, {1})});
  KILN_COMPARE_VALUES(y, {4, 6, 8, 10, 12, 14});
  run("torch.nn.functional.relu", {F32({-1, 1}, {2})}, {{"inplace", true}}, Mode::Eager, &info);
  QCOMPARE(info.returns_arg, 0);
}

void TestTorchApi::argumentErrors() {
  Tensor x = F32({1, 2, 3}, {3});
  std::string e = error_of("torch.sum", {x, "a"});
  QVERIFY2(contains(e, "sum() received an invalid combination of arguments - got (Tensor, str), but expected one of:"),
           e.c_str());
  QVERIFY2(contains(e, " * (Tensor input, *, torch.dtype dtype = None)"), e.c_str());
  QVERIFY2(contains(e, " * (Tensor input, tuple of ints dim, bool keepdim = False, *, torch.dtype dtype = None)"), e.c_str());
  e = error_of("torch.sin", {1});
  QVERIFY2(contains(e, "sin(): argument 'input' (position 1) must be Tensor, not int"), e.c_str());
  e = error_of("torch.sin", {x}, {{"foo", 1}});
  QVERIFY2(contains(e, "sin() got an unexpected keyword argument 'foo'"), e.c_str());
  e = error_of("torch.sin", {});
  QVERIFY2(contains(e, "sin() missing 1 required positional arguments: \"input\""), e.c_str());
  e = error_of("torch.sin", {x, x});
  QVERIFY2(contains(e, "sin() takes 1 positional argument but 2 were given"), e.c_str());
  e = error_of("Tensor.view", {x, "a"});
  QVERIFY2(contains(e, "view() received an invalid combination of arguments - got (str), but expected one of:\n"
                       " * (tuple of ints size)\n"
                       "      didn't match because some of the arguments have invalid types: (!str!)\n"
                       " * (torch.dtype dtype)\n"
                       "      didn't match because some of the arguments have invalid types: (!str!)"), e.c_str());
  e = error_of("torch.zeros", {2}, {{"device", "cuda"}});
  QVERIFY2(contains(e, "CUDA device is not available here"), e.c_str());
  e = error_of("Tensor.to", {x, "cuda:0"});
  QVERIFY2(contains(e, "CUDA device is not available here"), e.c_str());
  e = error_of("Tensor.sum", {x, 3});
  QVERIFY2(contains(e, "Dimension out of range"), e.c_str());
  // bool is not an int (var(x, True) is the unbiased overload) and int is not a bool
  QVERIFY(contains(error_of("Tensor.unsqueeze", {x, true}), "must be int, not bool"));
  e = error_of("torch.cat", {x});
  QVERIFY2(contains(e, "argument 'tensors' (position 1) must be tuple of Tensors, not Tensor"), e.c_str());
}

void TestTorchApi::operatorsAndPromotion() {
  using K = py::BinaryOpKind;
  Tensor i = I64({1, 2, 3, -7}, {4});
  Tensor f = F32({1.5f, -2.5f, 4, 8}, {4});
  // Result dtypes and values as PyTorch 2.11 gives them (measured; wrapped numbers
  // do not widen tensors, shifts by >= 64 give 0).
  Tensor r = op(K::Mul, i, 2.5).to_tensor();
  QCOMPARE(r.dtype(), DType::Float32);
  KILN_COMPARE_VALUES(r, {2.5, 5, 7.5, -17.5});
  r = op(K::TrueDiv, i, 2).to_tensor();
  QCOMPARE(r.dtype(), DType::Float32);
  KILN_COMPARE_VALUES(r, {0.5, 1, 1.5, -3.5});
  r = op(K::FloorDiv, i, 2).to_tensor();
  QCOMPARE(r.dtype(), DType::Int64);
  KILN_COMPARE_VALUES(r, {0, 1, 1, -4});
  r = op(K::FloorDiv, f, 2).to_tensor();
  QCOMPARE(r.dtype(), DType::Float32);
  KILN_COMPARE_VALUES(r, {0, -2, 2, 4});
  r = op(K::Mod, i, 3).to_tensor();
  KILN_COMPARE_VALUES(r, {1, 2, 0, 2});
  r = op(K::Sub, 2, i).to_tensor();  // rsub
  QCOMPARE(r.dtype(), DType::Int64);
  KILN_COMPARE_VALUES(r, {1, 0, -1, 9});
  r = op(K::TrueDiv, 1, i).to_tensor();  // reciprocal() * 1
  QCOMPARE(r.dtype(), DType::Float32);
  KILN_COMPARE_VALUES(r, {1, 0.5, 1.0 / 3, -1.0 / 7});
  r = op(K::Pow, 2, i).to_tensor();
  QCOMPARE(r.dtype(), DType::Int64);
  KILN_COMPARE_VALUES(op(K::Pow, 2, I64({0, 1, 3}, {3})).to_tensor(), {1, 2, 8});
  r = op(K::Pow, i, 2).to_tensor();
  KILN_COMPARE_VALUES(r, {1, 4, 9, 49});
  QCOMPARE(op(K::Pow, i, 0.5).to_tensor().dtype(), DType::Float32);
  r = op(K::FloorDiv, 7, I64({2, -2}, {2})).to_tensor();  // __rfloordiv__
  KILN_COMPARE_VALUES(r, {3, -4});
  r = op(K::Mod, 7, I64({2, -2}, {2})).to_tensor();
  KILN_COMPARE_VALUES(r, {1, -1});
  QCOMPARE(op(K::Mul, Tensor::full({2}, 1, DType::Int32), 2).to_tensor().dtype(), DType::Int32);
  QCOMPARE(op(K::Add, Tensor::full({2}, 1, DType::Float16), 2.5).to_tensor().dtype(), DType::Float16);
  QCOMPARE(op(K::Add, B({true}, {1}), 1).to_tensor().dtype(), DType::Int64);
  QCOMPARE(op(K::Add, Tensor::full({2}, 1, DType::Int32), Tensor::scalar_tensor(1.5, DType::Float64)).to_tensor().dtype(),
           DType::Float64);
  // @, bitwise and shifts
  Tensor a = F32({1, 2, 3, 4}, {2, 2});
  KILN_COMPARE_VALUES(op(K::MatMul, a, a).to_tensor(), {7, 10, 15, 22});
  KILN_COMPARE_VALUES(op(K::And, I64({6, 5}, {2}), 3).to_tensor(), {2, 1});
  KILN_COMPARE_VALUES(op(K::Or, I64({6, 5}, {2}), I64({1, 2}, {2})).to_tensor(), {7, 7});
  KILN_COMPARE_VALUES(op(K::Xor, B({true, false}, {2}), true).to_tensor(), {0, 1});
  KILN_COMPARE_VALUES(op(K::LShift, I64({1, 3, -1}, {3}), 2).to_tensor(), {4, 12, -4});
  KILN_COMPARE_VALUES(op(K::RShift, I64({8, -8, 5}, {3}), 1).to_tensor(), {4, -4, 2});
  KILN_COMPARE_VALUES(op(K::LShift, 1, I64({0, 3, 64}, {3})).to_tensor(), {1, 8, 0});
  QVERIFY(!binary(K::LShift, f, 1, Mode::Eager).ok());
  QVERIFY(!binary(K::MatMul, a, 2, Mode::Eager).ok());
  // unary and comparisons (numbers on the left reflect)
  KILN_COMPARE_VALUES(unary(py::UnaryOpKind::Neg, i, Mode::Eager)->to_tensor(), {-1, -2, -3, 7});
  KILN_COMPARE_VALUES(unary(py::UnaryOpKind::Invert, I64({0, 5}, {2}), Mode::Eager)->to_tensor(), {-1, -6});
  KILN_COMPARE_VALUES(unary(py::UnaryOpKind::Invert, B({true, false}, {2}), Mode::Eager)->to_tensor(), {0, 1});
  Tensor lt = compare(py::CompareKind::Lt, 2, i, Mode::Eager)->to_tensor();
  QCOMPARE(lt.dtype(), DType::Bool);
  KILN_COMPARE_VALUES(lt, {0, 0, 1, 0});
  KILN_COMPARE_VALUES(compare(py::CompareKind::Ge, f, 4, Mode::Eager)->to_tensor(), {0, 0, 1, 1});
  KILN_COMPARE_VALUES(compare(py::CompareKind::Eq, i, I64({1, 0, 3, 0}, {4}), Mode::Eager)->to_tensor(), {1, 0, 1, 0});
  QCOMPARE(compare(py::CompareKind::Eq, i, Value(), Mode::Eager)->to_bool(), false);
  QCOMPARE(compare(py::CompareKind::Ne, i, Value(), Mode::Eager)->to_bool(), true);
  QVERIFY(!compare(py::CompareKind::Lt, i, Value(), Mode::Eager).ok());
  // Meta mode gives the same metadata.
  Tensor mi = Tensor::meta({4}, DType::Int64);
  auto meta_r = binary(K::TrueDiv, mi, 2, Mode::Meta);
  QVERIFY(meta_r.ok());
  QVERIFY(meta_r->to_tensor().is_meta());
  QCOMPARE(meta_r->to_tensor().dtype(), DType::Float32);
  QCOMPARE(binary(K::LShift, mi, 1, Mode::Meta)->to_tensor().dtype(), DType::Int64);
}

void TestTorchApi::inplaceOperators() {
  using K = py::BinaryOpKind;
  Tensor x = F32({1, 2, 3}, {3});
  Tensor alias = x;
  Value r = op(K::Add, x, 1, /*inplace=*/true);
  QCOMPARE(r.to_tensor().storage(), x.storage());
  KILN_COMPARE_VALUES(alias, {2, 3, 4});
  op(K::Mul, x, F32({2}, {1}), true);
  KILN_COMPARE_VALUES(x, {4, 6, 8});
  // Writes through views into the base.
  Tensor base = F32({0, 0, 0, 0}, {2, 2});
  Tensor row = run1("Tensor.select", {base, 0, 1});
  op(K::Sub, row, 5, true);
  KILN_COMPARE_VALUES(base, {0, 0, -5, -5});
  // int x /= 2 cannot cast back; a broadcast that grows self is refused.
  Tensor i = I64({1, 2}, {2});
  auto bad = binary(K::TrueDiv, i, 2, Mode::Eager, true);
  QVERIFY(!bad.ok());
  QVERIFY2(contains(bad.status().message(), "result type float32 can't be cast to the desired output type int64"),
           bad.status().message().c_str());
  auto grow = binary(K::Add, F32({1}, {1}), F32({1, 2}, {2}), Mode::Eager, true);
  QVERIFY(!grow.ok());
  QVERIFY(contains(grow.status().message(), "doesn't match the broadcast shape"));
  op(K::FloorDiv, i, 2, true);
  KILN_COMPARE_VALUES(i, {0, 1});
  // a number on the left is not in place (Python falls back to a + b)
  Value n = op(K::Add, 1, x, true);
  QVERIFY(n.to_tensor().storage() != x.storage());
  // Meta mode returns self and leaves data alone.
  Tensor m = Tensor::meta({3}, DType::Float32);
  auto mr = binary(K::Add, m, 1, Mode::Meta, true);
  QVERIFY(mr.ok());
  QVERIFY(mr->to_tensor().is_meta());
  QVERIFY(!binary(K::TrueDiv, Tensor::meta({3}, DType::Int64), 2, Mode::Meta, true).ok());
}





void TestTorchApi::tensorAttributes() {
  Tensor x = kiln::test::arange_f32({2, 3, 4});
  CallInfo info;
  auto shape = tensor_attribute(x, "shape", Mode::Eager, &info);
  QVERIFY(shape && shape->ok());
  QCOMPARE(info.kind, ResultKind::Size);
  QCOMPARE((*shape)->to_int_list(), (std::vector<int64_t>{2, 3, 4}));
  // x.T on 3-D reverses the dims and x.mT swaps the last two (PyTorch 2.11 strides).
  QCOMPARE((*tensor_attribute(x, "T", Mode::Eager))->to_tensor().type_str(), std::string("f32[4, 3, 2][1, 4, 12]"));
  QCOMPARE((*tensor_attribute(x, "mT", Mode::Eager))->to_tensor().type_str(), std::string("f32[2, 4, 3][12, 1, 4]"));
  QCOMPARE((*tensor_attribute(x, "dtype", Mode::Eager))->to_dtype(), DType::Float32);
  QCOMPARE((*tensor_attribute(x, "ndim", Mode::Eager))->to_int(), int64_t(3));
  QCOMPARE((*tensor_attribute(x, "device", Mode::Eager))->to_string(), std::string("cpu"));
  QVERIFY(!tensor_attribute(x, "no_such_attribute", Mode::Eager).has_value());
  auto mt = tensor_attribute(Tensor::meta({2}, DType::Float32), "mT", Mode::Meta);
  QVERIFY(mt && !mt->ok());
  QCOMPARE((*tensor_attribute(Tensor::meta({2, 3}, DType::Float32), "T", Mode::Meta))->to_tensor().sizes(), (Shape{3, 2}));
  QCOMPARE(operator_callable(py::UnaryOpKind::Neg).graph_target, std::string("operator.neg"));
  QCOMPARE(operator_callable(py::BinaryOpKind::FloorDiv, true).python_repr, std::string("<built-in function ifloordiv>"));
  QCOMPARE(setitem_callable().graph_target, std::string("operator.setitem"));
}

void TestTorchApi::creation() {
  // arange(5) is int64; arange(0., 1, 0.1) float32 (PyTorch 2.11)
  Tensor a = run1("torch.arange", {5});
  QCOMPARE(a.dtype(), DType::Int64);
  KILN_COMPARE_VALUES(a, {0, 1, 2, 3, 4});
  Tensor b = run1("torch.arange", {0.0, 1, 0.1});
  QCOMPARE(b.dtype(), DType::Float32);
  QCOMPARE(b.numel(), int64_t(10));
  QCOMPARE(run1("torch.arange", {1, 7, 2}).numel(), int64_t(3));
  QCOMPARE(run1("torch.zeros", {2, 3}).sizes(), (Shape{2, 3}));
  QCOMPARE(run1("torch.zeros", {L({2, 3})}).sizes(), (Shape{2, 3}));
  QCOMPARE(run1("torch.zeros", {}, {{"size", L({4})}}).sizes(), (Shape{4}));
  QCOMPARE(run1("torch.ones", {2}, {{"dtype", DType::Int32}}).dtype(), DType::Int32);
  QCOMPARE(run1("torch.full", {L({2}), 7}).dtype(), DType::Int64);
  QCOMPARE(run1("torch.full", {L({2}), 7.0}).dtype(), DType::Float32);
  QCOMPARE(run1("torch.full", {L({2}), true}).dtype(), DType::Bool);
  KILN_COMPARE_VALUES(run1("torch.eye", {2, 3}), {1, 0, 0, 0, 1, 0});
  KILN_COMPARE_VALUES(run1("torch.linspace", {0, 1, 5}), {0, 0.25, 0.5, 0.75, 1});
  Tensor like = run1("torch.zeros_like", {F32({1, 2}, {2})}, {{"dtype", DType::Int64}});
  QCOMPARE(like.dtype(), DType::Int64);
  KILN_COMPARE_VALUES(run1("torch.full_like", {F32({1, 2}, {2}), 3}), {3, 3});
  KILN_COMPARE_VALUES(run1("Tensor.new_ones", {I64({1}, {1}), 2}), {1, 1});
  QCOMPARE(run1("Tensor.new_zeros", {I64({1}, {1}), L({2})}).dtype(), DType::Int64);
  QCOMPARE(run1("torch.empty", {3}, {{"device", "meta"}}).is_meta(), true);
  // Meta mode gives meta tensors with the same metadata
  Tensor am = run1("torch.arange", {0.0, 1, 0.1}, {}, Mode::Meta);
  QVERIFY(am.is_meta());
  QCOMPARE(am.type_str(), b.type_str());
  QVERIFY(run1("torch.zeros", {2, 3}, {}, Mode::Meta).is_meta());
}

void TestTorchApi::randomMatchesPyTorch() {
  // PyTorch 2.11: torch.manual_seed(0); torch.rand(3) -> [0.4963, 0.7682, 0.0885];
  // torch.manual_seed(0); torch.randn(3) -> [1.5410, -0.2934, -2.1788].
  run("torch.manual_seed", {0});
  Tensor r = run1("torch.rand", {3});
  QCOMPARE(r.dtype(), DType::Float32);
  std::vector<double> rv = values(r);
  QVERIFY(std::abs(rv[0] - 0.4963) < 1e-4 && std::abs(rv[1] - 0.7682) < 1e-4 && std::abs(rv[2] - 0.0885) < 1e-4);
  run("torch.manual_seed", {0});
  std::vector<double> nv = values(run1("torch.randn", {3}));
  QVERIFY(std::abs(nv[0] - 1.5410) < 1e-4 && std::abs(nv[1] + 0.2934) < 1e-4 && std::abs(nv[2] + 2.1788) < 1e-4);
  run("torch.manual_seed", {0});
  Tensor x = Tensor::empty({3}, DType::Float32);
  CallInfo info;
  run("Tensor.uniform_", {x}, {}, Mode::Eager, &info);
  QCOMPARE(info.returns_arg, 0);
  KILN_COMPARE_VALUES(x, rv);
  Tensor ri = run1("torch.randint", {0, 10, L({100})});
  QCOMPARE(ri.dtype(), DType::Int64);
  for (double v : values(ri)) QVERIFY(v >= 0 && v < 10);
  QCOMPARE(run1("torch.randint", {5, L({2, 2})}).sizes(), (Shape{2, 2}));
  QCOMPARE(run1("torch.randn_like", {F32({1, 2}, {2})}).sizes(), (Shape{2}));
  QVERIFY(run1("torch.randn", {2, 3}, {}, Mode::Meta).is_meta());
  QVERIFY(contains(error_of("torch.randn", {2}, {{"dtype", DType::Int64}}), "floating point"));
  Tensor p = run1("torch.bernoulli", {F32({0, 1, 0, 1}, {4})});
  KILN_COMPARE_VALUES(p, {0, 1, 0, 1});
}

void TestTorchApi::reductionsAndShapes() {
  Tensor x = F32({3, 1, 2, 6, 5, 4}, {2, 3});
  KILN_COMPARE_VALUES(run1("Tensor.mean", {x, 0}), {4.5, 3, 3});
  KILN_COMPARE_VALUES(run1("Tensor.amax", {x, -1}), {3, 6});
  KILN_COMPARE_VALUES(run1("torch.argmax", {x}), {3});
  KILN_COMPARE_VALUES(run1("Tensor.argmin", {x, 1}), {1, 2});
  KILN_COMPARE_VALUES(run1("Tensor.prod", {x, 1}), {6, 120});
  KILN_COMPARE_VALUES(run1("Tensor.cumsum", {x, 1}), {3, 4, 6, 6, 11, 15});
  KILN_COMPARE_VALUES(run1("Tensor.any", {run1("torch.gt", {x, 5})}), {1});
  KILN_COMPARE_VALUES(run1("Tensor.all", {run1("torch.gt", {x, 0}), 1}), {1, 1});
  KILN_COMPARE_VALUES(run1("Tensor.norm", {F32({3, 4}, {2})}), {5});
  KILN_COMPARE_VALUES(run1("torch.norm", {F32({3, -4}, {2}), 1}), {7});
  KILN_COMPARE_VALUES(run1("torch.linalg.vector_norm", {F32({3, -4}, {2})}, {{"ord", std::numeric_limits<double>::infinity()}}), {4});
  ValueList tk = run("Tensor.topk", {x, 2});
  KILN_COMPARE_VALUES(tk[0].to_tensor(), {3, 2, 6, 5});
  KILN_COMPARE_VALUES(tk[1].to_tensor(), {0, 2, 0, 1});
  ValueList so = run("torch.sort", {x}, {{"descending", true}});
  KILN_COMPARE_VALUES(so[0].to_tensor(), {3, 2, 1, 6, 5, 4});
  KILN_COMPARE_VALUES(run1("Tensor.argsort", {x, 0}), {0, 0, 0, 1, 1, 1});
  QCOMPARE(run1("torch.cat", {LT({x, x})}, {{"dim", 1}}).sizes(), (Shape{2, 6}));
  QCOMPARE(run1("torch.stack", {LT({x, x})}).sizes(), (Shape{2, 2, 3}));
  KILN_COMPARE_VALUES(run1("Tensor.gather", {x, 1, I64({2, 0}, {2, 1})}), {2, 6});
  KILN_COMPARE_VALUES(run1("Tensor.index_select", {x, 1, I64({2}, {1})}), {2, 4});
  KILN_COMPARE_VALUES(run1("Tensor.narrow", {x, 1, 1, 2}), {1, 2, 5, 4});
  KILN_COMPARE_VALUES(run1("Tensor.masked_fill", {x, run1("torch.gt", {x, 3}), -1}), {3, 1, 2, -1, -1, -1});
  Tensor sc = run1("Tensor.scatter", {Tensor::zeros({2, 3}, DType::Float32), 1, I64({2, 0}, {2, 1}), 1.0});
  KILN_COMPARE_VALUES(sc, {0, 0, 1, 1, 0, 0});
  KILN_COMPARE_VALUES(run1("torch.tril", {F32({1, 2, 3, 4}, {2, 2})}), {1, 0, 3, 4});
  KILN_COMPARE_VALUES(run1("torch.triu", {F32({1, 2, 3, 4}, {2, 2}), 1}), {0, 2, 0, 0});
  KILN_COMPARE_VALUES(run1("torch.flip", {x, L({1})}), {2, 1, 3, 4, 5, 6});
  KILN_COMPARE_VALUES(run1("Tensor.roll", {F32({1, 2, 3}, {3}), 1}), {3, 1, 2});
  KILN_COMPARE_VALUES(run1("torch.outer", {F32({1, 2}, {2}), F32({1, 10}, {2})}), {1, 10, 2, 20});
  KILN_COMPARE_VALUES(run1("Tensor.addmm", {F32({1}, {1}), F32({1, 2}, {1, 2}), F32({3, 4}, {2, 1})}), {12});
  KILN_COMPARE_VALUES(run1("torch.repeat_interleave", {F32({1, 2}, {2}), 2}), {1, 1, 2, 2});
  KILN_COMPARE_VALUES(run1("torch.rot90", {F32({1, 2, 3, 4}, {2, 2})}), {2, 4, 1, 3});
  KILN_COMPARE_VALUES(run1("torch.diag", {F32({1, 2}, {2})}), {1, 0, 0, 2});
  ValueList mg = run("torch.meshgrid", {F32({1, 2}, {2}), F32({3, 4, 5}, {3})}, {{"indexing", "ij"}});
  QCOMPARE(mg[0].to_tensor().sizes(), (Shape{2, 3}));
  KILN_COMPARE_VALUES(mg[1].to_tensor(), {3, 4, 5, 3, 4, 5});
  ValueList bt = run("torch.broadcast_tensors", {F32({1, 2}, {2, 1}), F32({1, 2, 3}, {3})});
  QCOMPARE(bt[0].to_tensor().sizes(), (Shape{2, 3}));
  QCOMPARE(run1("torch.isclose", {F32({1, 2}, {2}), F32({1.000001f, 3}, {2})}).dtype(), DType::Bool);
  KILN_COMPARE_VALUES(run1("torch.isclose", {F32({1, 2}, {2}), F32({1.000001f, 3}, {2})}), {1, 0});
  QCOMPARE(run("torch.allclose", {x, x})[0].to_bool(), true);
  QCOMPARE(run("torch.equal", {x, F32({3, 1, 2, 6, 5, 0}, {2, 3})})[0].to_bool(), false);
}

void TestTorchApi::nnFunctionalValues() {
  Tensor x = F32({-1, 0, 2}, {3});
  KILN_COMPARE_VALUES(run1("torch.nn.functional.relu", {x}), {0, 0, 2});
  KILN_COMPARE_VALUES(run1("torch.nn.functional.gelu", {x}), {-0.15865525, 0, 1.9544997});
  KILN_COMPARE_VALUES(run1("torch.nn.functional.gelu", {x}, {{"approximate", "tanh"}}), {-0.15880801, 0, 1.9545977});
  KILN_COMPARE_VALUES(run1("torch.nn.functional.silu", {x}), {-0.26894142, 0, 1.7615942});
  KILN_COMPARE_VALUES(run1("torch.nn.functional.leaky_relu", {x, 0.1}), {-0.1, 0, 2});
  KILN_COMPARE_VALUES(run1("torch.nn.functional.logsigmoid", {x}), {-1.3132616, -0.6931472, -0.12692805});
  KILN_COMPARE_VALUES(run1("torch.nn.functional.hardtanh", {x}), {-1, 0, 1});
  KILN_COMPARE_VALUES(run1("torch.nn.functional.softmax", {F32({1, 1, 1, 1}, {2, 2})}, {{"dim", -1}}), {0.5, 0.5, 0.5, 0.5});
  // linear: y = x W^T + b
  Tensor in = F32({1, 2}, {1, 2}), w = F32({1, 0, 0, 1, 1, 1}, {3, 2}), bias = F32({0, 1, 2}, {3});
  KILN_COMPARE_VALUES(run1("torch.nn.functional.linear", {in, w, bias}), {1, 3, 5});
  // conv2d: a 3x3 ones kernel over a 4x4 ones image with padding 1 (and the 'same' string)
  Tensor img = Tensor::full({1, 1, 4, 4}, 1.0, DType::Float32), k = Tensor::full({1, 1, 3, 3}, 1.0, DType::Float32);
  Tensor c = run1("torch.nn.functional.conv2d", {img, k}, {{"padding", 1}});
  QCOMPARE(c.sizes(), (Shape{1, 1, 4, 4}));
  KILN_COMPARE_VALUES(run1("Tensor.flatten", {c}), {4, 6, 6, 4, 6, 9, 9, 6, 6, 9, 9, 6, 4, 6, 6, 4});
  QCOMPARE(run1("torch.conv2d", {img, k}, {{"padding", "same"}}).sizes(), (Shape{1, 1, 4, 4}));
  QCOMPARE(run1("torch.conv2d", {img, k, Value(), 2}).sizes(), (Shape{1, 1, 1, 1}));
  // pools
  Tensor p = kiln::test::arange_f32({1, 1, 4, 4});
  KILN_COMPARE_VALUES(run1("torch.nn.functional.max_pool2d", {p, 2}), {5, 7, 13, 15});
  ValueList mp = run("torch.nn.functional.max_pool2d", {p, 2}, {{"return_indices", true}});
  QCOMPARE(mp.size(), size_t(2));
  KILN_COMPARE_VALUES(mp[1].to_tensor(), {5, 7, 13, 15});
  KILN_COMPARE_VALUES(run1("torch.nn.functional.avg_pool2d", {p, 2}), {2.5, 4.5, 10.5, 12.5});
  KILN_COMPARE_VALUES(run1("torch.nn.functional.adaptive_avg_pool2d", {p, 1}), {7.5});
  QCOMPARE(run1("torch.nn.functional.adaptive_avg_pool2d", {p, LT({Value(), 2})}).sizes(), (Shape{1, 1, 4, 2}));
  // layer_norm, embedding (negative padding_idx), one_hot
  KILN_COMPARE_VALUES(run1("torch.nn.functional.layer_norm", {F32({1, 3}, {1, 2}), L({2})}), {-0.99999, 0.99999});
  Tensor emb = F32({0, 1, 10, 11, 20, 21}, {3, 2});
  KILN_COMPARE_VALUES(run1("torch.nn.functional.embedding", {I64({2, 0}, {2}), emb}, {{"padding_idx", -1}}), {20, 21, 0, 1});
  Tensor oh = run1("torch.nn.functional.one_hot", {I64({0, 2}, {2})});
  QCOMPARE(oh.sizes(), (Shape{2, 3}));
  QCOMPARE(oh.dtype(), DType::Int64);
  KILN_COMPARE_VALUES(oh, {1, 0, 0, 0, 0, 1});
  // losses: cross_entropy of uniform logits is log(C); mse; nll
  Tensor logits = Tensor::zeros({2, 4}, DType::Float32);
  KILN_COMPARE_VALUES(run1("torch.nn.functional.cross_entropy", {logits, I64({1, 3}, {2})}), {std::log(4.0)});
  KILN_COMPARE_VALUES(run1("torch.nn.functional.mse_loss", {F32({1, 2}, {2}), F32({2, 4}, {2})}), {2.5});
  KILN_COMPARE_VALUES(run1("torch.nn.functional.mse_loss", {F32({1, 2}, {2}), F32({2, 4}, {2})}, {{"reduction", "sum"}}), {5});
  KILN_COMPARE_VALUES(run1("torch.nn.functional.nll_loss", {F32({-1, -2, -3, -4}, {2, 2}), I64({0, 1}, {2})}), {2.5});
  KILN_COMPARE_VALUES(run1("torch.nn.functional.l1_loss", {F32({1, 2}, {2}), F32({2, 4}, {2})}), {1.5});
  QVERIFY(contains(error_of("torch.nn.functional.mse_loss", {F32({1}, {1}), F32({1}, {1})}, {{"reduction", "avg"}}),
                   "avg is not a valid value for reduction"));
  // interpolate nearest x2 and pixel_shuffle
  Tensor up = run1("torch.nn.functional.interpolate", {F32({1, 2}, {1, 1, 2})}, {{"scale_factor", 2}});
  KILN_COMPARE_VALUES(up, {1, 1, 2, 2});
  Tensor ps = run1("torch.nn.functional.pixel_shuffle", {kiln::test::arange_f32({1, 4, 1, 1}), 2});
  QCOMPARE(ps.sizes(), (Shape{1, 1, 2, 2}));
  KILN_COMPARE_VALUES(ps, {0, 1, 2, 3});
  KILN_COMPARE_VALUES(run1("torch.nn.functional.cosine_similarity", {F32({1, 0}, {1, 2}), F32({1, 1}, {1, 2})}),
                      {1 / std::sqrt(2.0)});
  // scaled_dot_product_attention with one key: the output is the value
  Tensor q = Tensor::full({1, 2, 3, 4}, 1.0, DType::Float32), kv = Tensor::full({1, 2, 1, 4}, 2.0, DType::Float32);
  Tensor att = run1("torch.nn.functional.scaled_dot_product_attention", {q, kv, kv});
  QCOMPARE(att.sizes(), (Shape{1, 2, 3, 4}));
  for (double v : values(att)) QCOMPARE(v, 2.0);
}

void TestTorchApi::batchNormUpdatesRunningStats() {
  // F.batch_norm(x, rm, rv, training=True, momentum=0.1): rm <- 0.9 rm + 0.1 mean,
  // rv <- 0.9 rv + 0.1 var_unbiased, as PyTorch does in place.
  Tensor x = F32({1, 3, 2, 6}, {2, 2});  // channel 0: {1, 2}, channel 1: {3, 6}
  Tensor rm = Tensor::zeros({2}, DType::Float32), rv = Tensor::full({2}, 1.0, DType::Float32);
  Tensor y = run1("torch.nn.functional.batch_norm", {x, rm, rv}, {{"training", true}});
  KILN_COMPARE_VALUES(rm, {0.15, 0.45});
  KILN_COMPARE_VALUES(rv, {0.95, 1.35});
  KILN_COMPARE_VALUES(y, {-0.99998, -0.99999, 0.99998, 0.99999});
  // evaluation uses the running stats and leaves them alone
  Tensor e = run1("torch.nn.functional.batch_norm", {F32({0.15f, 0.45f}, {1, 2}), rm, rv});
  KILN_COMPARE_VALUES(e, {0, 0});
  KILN_COMPARE_VALUES(rm, {0.15, 0.45});
  // Meta mode does not touch them
  run("torch.nn.functional.batch_norm", {Tensor::meta({2, 2}, DType::Float32), to_meta(rm), to_meta(rv)},
      {{"training", true}}, Mode::Meta);
  KILN_COMPARE_VALUES(rm, {0.15, 0.45});
  QVERIFY(contains(error_of("torch.nn.functional.batch_norm", {F32({1, 2}, {1, 2}), rm, rv}, {{"training", true}}),
                   "Expected more than 1 value per channel when training"));
}

void TestTorchApi::dropoutModes() {
  Tensor x = Tensor::full({1000}, 1.0, DType::Float32);
  CallInfo info;
  ValueList same = run("torch.nn.functional.dropout", {x}, {{"training", false}}, Mode::Eager, &info);
  QCOMPARE(info.returns_arg, 0);
  QCOMPARE(same[0].to_tensor().storage(), x.storage());
  KILN_COMPARE_VALUES(run1("torch.nn.functional.dropout", {F32({1, 2}, {2})}, {{"p", 1.0}}), {0, 0});
  run("torch.manual_seed", {0});
  Tensor d = run1("torch.nn.functional.dropout", {x, 0.5});
  int zeros = 0;
  for (double v : values(d)) {
    QVERIFY(v == 0 || v == 2);
    zeros += v == 0;
  }
  QVERIFY(zeros > 400 && zeros < 600);
  // the same seed gives the same mask
  run("torch.manual_seed", {0});
  KILN_COMPARE_VALUES(run1("torch.nn.functional.dropout", {x, 0.5}), values(d));
  QVERIFY(contains(error_of("torch.nn.functional.dropout", {x, 1.5}), "dropout probability has to be between 0 and 1"));
  Tensor dm = run1("torch.nn.functional.dropout", {Tensor::meta({4, 5}, DType::Float32)}, {}, Mode::Meta);
  QVERIFY(dm.is_meta());
  QCOMPARE(dm.sizes(), (Shape{4, 5}));
  Tensor d2 = run1("torch.nn.functional.dropout2d", {Tensor::full({2, 3, 4, 4}, 1.0, DType::Float32)});
  for (int64_t c = 0; c < 6; ++c) {
    std::vector<double> ch = values(run1("Tensor.select", {run1("Tensor.reshape", {d2, 6, 16}), 0, c}));
    for (double v : ch) QCOMPARE(v, ch[0]);  // one draw per channel
  }
}

void TestTorchApi::einsumAndFriends() {
  Tensor a = F32({1, 2, 3, 4, 5, 6}, {2, 3}), b = F32({1, 0, 0, 1, 1, 1}, {3, 2});
  KILN_COMPARE_VALUES(run1("torch.einsum", {"ij,jk->ik", a, b}), {4, 5, 10, 11});
  KILN_COMPARE_VALUES(run1("torch.einsum", {"ij,jk", ValueList{a, b}}), {4, 5, 10, 11});
  KILN_COMPARE_VALUES(run1("torch.einsum", {"ij->ji", a}), {1, 4, 2, 5, 3, 6});
  KILN_COMPARE_VALUES(run1("torch.einsum", {"ii", F32({1, 2, 3, 4}, {2, 2})}), {5});
  KILN_COMPARE_VALUES(run1("torch.einsum", {"ij->", a}), {21});
  KILN_COMPARE_VALUES(run1("torch.einsum", {"i,j->ij", F32({1, 2}, {2}), F32({3, 4}, {2})}), {3, 4, 6, 8});
  Tensor q = kiln::test::arange_f32({2, 3, 4}), k = kiln::test::arange_f32({2, 5, 4});
  Tensor s = run1("torch.einsum", {"bqd,bkd->bqk", q, k});
  QCOMPARE(s.sizes(), (Shape{2, 3, 5}));
  KILN_COMPARE_VALUES(run1("Tensor.flatten", {s}), values(run1("torch.matmul", {q, run1("Tensor.transpose", {k, 1, 2})})));
  Tensor e = run1("torch.einsum", {"...ij,...jk->...ik", q, run1("Tensor.transpose", {k, 1, 2})});
  QCOMPARE(e.sizes(), (Shape{2, 3, 5}));
  KILN_COMPARE_VALUES(run1("torch.tensordot", {a, b}, {{"dims", 1}}), {4, 5, 10, 11});
  QVERIFY(!call(fn("torch.einsum"), {"ij,jk->ik", a}, {}, Mode::Eager).ok());
  Tensor em = run1("torch.einsum", {"bqd,bkd->bqk", to_meta(q), to_meta(k)}, {}, Mode::Meta);
  QVERIFY(em.is_meta());
  QCOMPARE(em.sizes(), (Shape{2, 3, 5}));
}


QTEST_APPLESS_MAIN(TestTorchApi)
#include "test_torch_api.moc"
