// embedding (row lookup) and embedding_dense_backward (rows summed back per
// index, with padding_idx and scale_grad_by_freq), plus the corpus gradient.
#include "nn_test_util.h"

#include "core/corpus/conformance.h"

using namespace kiln;
using kiln::test::call1;
using kiln::test::error_of;
using kiln::test::random_tensor;
using kiln::test::values;

class TestOpsEmbedding : public QObject {
  Q_OBJECT
 private slots:
  void lookup_rows() {
    Tensor w = kiln::test::arange_f32({4, 3});
    Tensor idx = Tensor::from_vector<int64_t>({3, 0, 3, 1}, {2, 2});
    Tensor y = call1("aten::embedding", {w, idx});
    QCOMPARE(y.sizes(), (Shape{2, 2, 3}));
    KILN_COMPARE_VALUES(y, {9, 10, 11, 0, 1, 2, 9, 10, 11, 3, 4, 5});
    Tensor i32 = Tensor::from_vector<int32_t>({2}, {1});
    KILN_COMPARE_VALUES(call1("aten::embedding", {w.t().contiguous().t(), i32}), {6, 7, 8});  // strided weight
    QCOMPARE(call1("aten::embedding", {w, Tensor::from_vector<int64_t>({1}, {})}).sizes(), (Shape{3}));
    Tensor wi = Tensor::from_vector<int64_t>({5, 6, 7, 8}, {2, 2});
    KILN_COMPARE_VALUES(call1("aten::embedding", {wi, Tensor::from_vector<int64_t>({1, 1}, {2})}), {7, 8, 7, 8});
    QCOMPARE(call1("aten::embedding", {w, Tensor::zeros({0, 5}, DType::Int64)}).sizes(), (Shape{0, 5, 3}));
  }

  void lookup_errors() {
    Tensor w = kiln::test::arange_f32({4, 3});
    KILN_EXPECT_ERROR(error_of("aten::embedding", {w, Tensor::from_vector<int64_t>({4}, {1})}), "index out of range in self");
    KILN_EXPECT_ERROR(error_of("aten::embedding", {w, Tensor::from_vector<int64_t>({-1}, {1})}), "index out of range in self");
    KILN_EXPECT_ERROR(error_of("aten::embedding", {w, Tensor::from_vector<float>({1}, {1})}),
                      "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int");
    KILN_EXPECT_ERROR(error_of("aten::embedding", {w.select(0, 0), Tensor::from_vector<int64_t>({1}, {1})}),
                      "'weight' must be 2-D");
  }

  void dense_backward() {
    Tensor idx = Tensor::from_vector<int64_t>({1, 3, 1, 0}, {2, 2});
    Tensor g = kiln::test::arange_f32({2, 2, 2}, 1.f);  // rows (1,2) (3,4) (5,6) (7,8)
    Tensor gw = call1("aten::embedding_dense_backward", {g, idx, int64_t(5), int64_t(-1), false});
    QCOMPARE(gw.sizes(), (Shape{5, 2}));
    KILN_COMPARE_VALUES(gw, {7, 8, 6, 8, 0, 0, 3, 4, 0, 0});
    Tensor gp = call1("aten::embedding_dense_backward", {g, idx, int64_t(5), int64_t(1), false});
    KILN_COMPARE_VALUES(gp, {7, 8, 0, 0, 0, 0, 3, 4, 0, 0});
    Tensor gf = call1("aten::embedding_dense_backward", {g, idx, int64_t(5), int64_t(-1), true});
    KILN_COMPARE_VALUES(gf, {7, 8, 3, 4, 0, 0, 3, 4, 0, 0});  // index 1 seen twice: halved
    Tensor gh = call1("aten::embedding_dense_backward", {g.to(DType::BFloat16), idx, int64_t(5), int64_t(-1), false});
    QCOMPARE(gh.dtype(), DType::BFloat16);
    KILN_COMPARE_VALUES(gh, {7, 8, 6, 8, 0, 0, 3, 4, 0, 0});
    // Like PyTorch's add_ per index, float16 rounds after every row: 1 + 2^-11 + 2^-11 stays 1.
    Tensor small = Tensor::from_vector<float>({1.f, 1.f / 2048, 1.f / 2048}, {3, 1}).to(DType::Float16);
    Tensor same = Tensor::from_vector<int64_t>({0, 0, 0}, {3});
    KILN_COMPARE_VALUES(call1("aten::embedding_dense_backward", {small, same, int64_t(1), int64_t(-1), false}), {1});
    KILN_EXPECT_ERROR(error_of("aten::embedding_dense_backward", {g, idx, int64_t(3), int64_t(-1), false}),
                      "index out of range in self");
  }

  void backward_matches_corpus() {
    auto corpus = load_corpus(kiln::test::reference_dir() + "/opcorpus");
    QVERIFY(corpus.ok());
    int checked = 0;
    for (const CorpusCase& k : corpus->cases) {
      if (k.op != "aten::embedding.default" || k.grad_outputs.empty()) continue;
      const Tensor& w = k.args[0].to_tensor();
      Tensor gw = call1("aten::embedding_dense_backward", {k.grad_outputs[0], k.args[1], w.size(0), int64_t(-1), false});
      for (const auto& [name, want] : k.grad_inputs) {
        if (name.back() != '0') continue;
        Comparison cmp = compare_tensors(gw, want);
        QVERIFY2(cmp.ok, cmp.reason.c_str());
        ++checked;
      }
    }
    QVERIFY(checked >= 1);
  }
};

QTEST_GUILESS_MAIN(TestOpsEmbedding)
#include "test_ops_embedding.moc"
