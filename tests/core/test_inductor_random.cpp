// Inductor's random prims as PyTorch's eager implementations run them: draws
// from the default generator. The expected numbers are PyTorch 2.11's own for
// torch.manual_seed(0) (torch.rand(5), torch.randn(17), torch.randint(0, 10,
// (8,)), as tests/core/test_generator.cpp records them) and, for the seeds,
// the generator's raw 64-bit draws reduced by hand.
#include "test_support.h"

#include <limits>

#include "core/tensor/generator.h"

using namespace kiln;
using kiln::test::call1;
using kiln::test::ints;
using kiln::test::values;

namespace {
std::string error_of(std::string_view op, const ValueList& args) {
  auto r = call_op(op, args);
  return r ? std::string() : r.status().message();
}
Tensor seed_tensor() { return Tensor::scalar_tensor(Scalar(int64_t(12345)), DType::Int64); }
}  // namespace

class TestInductorRandom : public QObject {
  Q_OBJECT
 private slots:
  void random_draws_torch_rand_and_randn() {
    default_cpu_generator().manual_seed(0);
    Tensor u = call1("prims::inductor_random", {ints({5}), seed_tensor(), "rand"});
    QCOMPARE(u.dtype(), DType::Float32);
    QCOMPARE(u.sizes(), (Shape{5}));
    QCOMPARE(values(u), (std::vector<double>{0.49625658988952637, 0.7682217955589294, 0.08847743272781372,
                                             0.13203048706054688, 0.30742281675338745}));
    default_cpu_generator().manual_seed(0);
    Tensor n = call1("prims::inductor_random", {ints({17}), seed_tensor(), "randn"});
    QCOMPARE(n.dtype(), DType::Float32);
    std::vector<double> want{-1.1258398294448853, -1.6959311962127686, 0.5666506290435791, 0.7935083508491516,
                             0.5988394618034363,  -1.5550950765609741, -0.3413603901863098, 1.85300612449646,
                             0.46809640526771545, -0.5854975581169128, -0.1733967512845993, 0.18347793817520142,
                             1.3893661499023438,  1.586334228515625,   0.946298360824585,   -0.843676745891571,
                             0.9318265914916992};
    KILN_COMPARE_VALUES(n, want);
    // The seed's value is not read: another seed, the same stream.
    default_cpu_generator().manual_seed(0);
    Tensor again = call1("prims::inductor_random", {ints({5}), Tensor::scalar_tensor(Scalar(int64_t(7)), DType::Int64),
                                                    "rand"});
    QCOMPARE(values(again), values(u));
  }

  void randint_draws_torch_randint() {
    default_cpu_generator().manual_seed(0);
    Tensor r = call1("prims::inductor_randint", {int64_t(0), int64_t(10), ints({2, 4}), seed_tensor()});
    QCOMPARE(r.dtype(), DType::Int64);
    QCOMPARE(r.sizes(), (Shape{2, 4}));
    QCOMPARE(values(r), (std::vector<double>{4, 9, 3, 0, 3, 9, 7, 3}));
  }

  // torch.randint(2**63 - 1, [count]): a range of 2^32 or more takes 64-bit draws
  // (two Mersenne Twister outputs, the first in the high half), reduced modulo the range.
  void seeds_and_lookup() {
    CpuGenerator g(0);
    const uint64_t range = uint64_t(std::numeric_limits<int64_t>::max());
    std::vector<double> want;
    for (int i = 0; i < 3; ++i) want.push_back(double(int64_t(g.random64() % range)));
    default_cpu_generator().manual_seed(0);
    Tensor seeds = call1("prims::inductor_seeds", {int64_t(3), "cpu"});
    QCOMPARE(seeds.dtype(), DType::Int64);
    QCOMPARE(seeds.sizes(), (Shape{3}));
    QCOMPARE(values(seeds), want);
    // The next draws continue the same stream.
    Tensor after = call1("prims::inductor_randint", {int64_t(0), int64_t(10), ints({4}), seed_tensor()});
    Tensor expect = Tensor::empty({4}, DType::Int64);
    random_from_to_(expect, 0, 10, g);
    QCOMPARE(values(after), values(expect));
    // seeds[index].clone(): a fresh 0-dim tensor, negative indices from the end.
    Tensor one = call1("prims::inductor_lookup_seed", {seeds, int64_t(1)});
    QCOMPARE(one.sizes(), Shape{});
    QCOMPARE(values(one), (std::vector<double>{want[1]}));
    QCOMPARE(values(call1("prims::inductor_lookup_seed", {seeds, int64_t(-1)})), (std::vector<double>{want[2]}));
    one.fill_(Scalar(int64_t(0)));
    QCOMPARE(values(seeds), want);
    default_cpu_generator().manual_seed(0);
    Tensor single = call1("prims::inductor_seed", {"cpu"});
    QCOMPARE(single.sizes(), Shape{});
    QCOMPARE(values(single), (std::vector<double>{want[0]}));
  }

  void refusals_and_meta() {
    QVERIFY(error_of("prims::inductor_seeds", {int64_t(2), "cuda:0"}).find("do not reproduce") != std::string::npos);
    QVERIFY(error_of("prims::inductor_random", {ints({2}), seed_tensor(), "randint"}).find("'rand' or 'randn'") !=
            std::string::npos);
    QVERIFY(error_of("prims::inductor_randint", {int64_t(3), int64_t(3), ints({2}), seed_tensor()})
                .find("from=3 >= to=3") != std::string::npos);
    QVERIFY(error_of("prims::inductor_lookup_seed", {Tensor::zeros({2}, DType::Int64), int64_t(2)}) != "");
    // Meta calls draw nothing.
    default_cpu_generator().manual_seed(0);
    auto m = call_meta("prims::inductor_seeds", {int64_t(4), "cpu"});
    QVERIFY(m.ok());
    QCOMPARE(m->at(0).to_tensor().sizes(), (Shape{4}));
    auto mr = call_meta("prims::inductor_random", {ints({3, 2}), seed_tensor(), "randn"});
    QVERIFY(mr.ok());
    QCOMPARE(mr->at(0).to_tensor().dtype(), DType::Float32);
    Tensor u = call1("prims::inductor_random", {ints({5}), seed_tensor(), "rand"});
    QCOMPARE(values(u).at(0), 0.49625658988952637);
  }
};

QTEST_GUILESS_MAIN(TestInductorRandom)
#include "test_inductor_random.moc"
