// Kiln's NumPy subset (core/python/numpy_*.cpp). Each program in
// tests/data/numpy/ is run and must print exactly what real NumPy printed for
// it (its .txt: /usr/bin/python3 with numpy 1.24.2 and torch 1.13 as the
// oracle). Those programs keep to behaviour NumPy 2.x shares with 1.24; where
// NumPy 2 differs (the repr of scalars, NEP 50 promotion, the printing changes
// of 2.2 and 2.3) the expected text below is NumPy 2's, written by hand from
// its rules. What the subset does not model stops with exit 3 at its line.
#include "test_support.h"

#include <QFile>
#include <QProcess>
#include <QTemporaryDir>

#include "core/python/vm.h"
#include "python_run_util.h"

using kiln::Status;
using namespace kiln::py;

namespace {

using kiln::test::Ran;

Ran run(const std::string& source) { return kiln::test::run_python(source); }

std::string data(const std::string& name) {
  QFile f(QString::fromStdString(std::string(KILN_SOURCE_DIR "/tests/data/numpy/") + name));
  if (!f.open(QIODevice::ReadOnly)) qFatal("cannot read %s", name.c_str());
  return f.readAll().toStdString();
}

// Runs tests/data/numpy/NAME.py and compares its output with NAME.txt line by
// line, naming the first line that differs.
void expect_numpy_output(const std::string& name) {
  Ran r = run(data(name + ".py"));
  QVERIFY2(r.exit == 0, (r.status.to_string() + "\n" + r.err).c_str());
  const std::string want = data(name + ".txt");
  if (r.out == want) return;
  QStringList got = QString::fromStdString(r.out).split('\n'), expected = QString::fromStdString(want).split('\n');
  for (qsizetype i = 0; i < std::min(got.size(), expected.size()); ++i)
    QVERIFY2(got[i] == expected[i], qPrintable(QString("line %1:\n  kiln:  %2\n  numpy: %3").arg(i + 1).arg(got[i], expected[i])));
  QCOMPARE(got.size(), expected.size());
}

}  // namespace

class TestPythonNumpy : public QObject {
  Q_OBJECT

 private slots:
  // str and repr of arrays: NumPy's digits (Dragon4, precision 8, its choice
  // between positional and scientific), padding, wrapping at 75 columns,
  // summarisation above 1000 elements, set_printoptions.
  void printing() { expect_numpy_output("printing"); }

  // Promotion across bool/int/uint8/int32/float32/float64, broadcasting,
  // integer // and %, comparisons, in-place operators, casts.
  void arithmetic() { expect_numpy_output("arithmetic"); }

  // Sums, means, std, var of float64 and float32 arrays in NumPy's order:
  // printed with all their digits, so bit for bit.
  void reductions() { expect_numpy_output("reductions"); }

  void indexing_and_shapes() { expect_numpy_output("indexing"); }

  // 0-d torch tensors and NumPy integers as indices and slice bounds, through __index__.
  void indexing_with_scalars() { expect_numpy_output("index_with_scalars"); }

  // The legacy MT19937 RandomState, draw for draw.
  void legacy_random() { expect_numpy_output("legacy_random"); }

  // default_rng: SeedSequence, PCG64 and the Generator's methods, draw for
  // draw (expected text from NumPy 2.5.2).
  void generator() { expect_numpy_output("generator"); }

  // What the Generator does not model stops by name rather than drawing
  // other numbers.
  void generator_refusals() {
    for (const char* line : {"rng.standard_normal(3, dtype=np.float32)", "rng.integers([1, 2], 5)",
                             "rng.integers(5, dtype=np.uint8)", "rng.gamma(2.0)", "rng.permuted(np.arange(3))",
                             "np.random.SeedSequence(1).generate_state(4)", "np.random.Generator(np.random.MT19937(1))",
                             "rng.bit_generator.advance(3)", "rng.choice(np.zeros((2, 3)), 1, axis=1)",
                             "rng.random(3, out=np.zeros(3))", "np.random.default_rng(np.random.RandomState(1))"}) {
      Ran r = run(std::string("import numpy as np\nrng = np.random.default_rng(0)\n") + line + "\n");
      QVERIFY2(r.exit == 3, line);
      QVERIFY2(r.err.find("outside Kiln's NumPy subset") != std::string::npos, (std::string(line) + ": " + r.err).c_str());
    }
  }

  // NumPy scalars behave as the numbers they hold.
  void scalars() { expect_numpy_output("scalars"); }

  // uint16/uint32 arrays over a wider tensor: NumPy's dtype, promotion and wraparound.
  void uint16_arrays() { expect_numpy_output("uint16"); }

  // String arrays: printing, indexing, unique, casts of numeric strings, ==.
  void string_arrays() { expect_numpy_output("strings"); }

  // Tensor.numpy() / torch.from_numpy share memory; torch.tensor copies.
  void torch_bridge() { expect_numpy_output("bridge"); }

  // NumPy 2 prints a scalar's type (NumPy 1.x printed the bare number).
  void numpy2_scalar_repr() {
    Ran r = run(
        "import numpy as np\n"
        "a = np.array([0.5, 1.5])\n"
        "print(repr(a.sum()), repr(a[0]), repr(np.float32(0.1)), repr(np.int64(3)), repr(a > 1), repr(a[1] > 1))\n"
        "print([a.mean(), np.arange(3)[2], np.float32(2.5)], str(np.float32(0.1)), np.float64(1e16), np.float32(1e-5))\n");
    QCOMPARE(r.exit, 0);
    QCOMPARE(r.out, std::string("np.float64(2.0) np.float64(0.5) np.float32(0.1) np.int64(3) array([False,  True]) np.True_\n"
                                "[np.float64(1.0), np.int64(2), np.float32(2.5)] 0.1 1e+16 1e-05\n"));
  }

  // NEP 50: NumPy scalars keep their dtype against arrays; Python numbers
  // take their partner's, and must fit an integer one.
  void numpy2_promotion() {
    Ran r = run(
        "import numpy as np\n"
        "f32 = np.array([1.0, 2.0], dtype=np.float32)\n"
        "i32 = np.array([1, 2], dtype=np.int32)\n"
        "print((np.float32(0.1) * 3).dtype, np.float32(0.1) * 3, (f32 + np.float64(1)).dtype, (i32 + np.int64(1)).dtype)\n"
        "print((f32 + 1.5).dtype, (i32 + 7).dtype, (np.uint8(200) + 100).dtype, np.uint8(200) + 100, np.float32(1) / 3)\n"
        "try:\n"
        "    np.array([1, 2], dtype=np.uint8) + 300\n"
        "except OverflowError as e:\n"
        "    print(e)\n");
    QVERIFY2(r.exit == 0, r.err.c_str());
    QCOMPARE(r.out, std::string("float32 0.3 float64 int64\nfloat32 int32 uint8 44 0.33333334\n"
                                "Python integer 300 out of bounds for uint8\n"));
  }

  // NumPy 2.3 prints float32 arrays in scientific notation from 1e6 (float64
  // from 1e8), comparing in the array's own precision (0.0001 as a float32 is
  // not below float32(0.0001)); NumPy 2.2 names the shape of a summarised array.
  void numpy2_printing() {
    Ran r = run(
        "import numpy as np\n"
        "print(np.array([1e6, 2e6], dtype=np.float32), np.array([1e6, 2e6]), np.array([0.0001, 0.001], dtype=np.float32))\n"
        "print(repr(np.arange(2000)))\n");
    QVERIFY2(r.exit == 0, r.err.c_str());
    QCOMPARE(r.out, std::string("[1.e+06 2.e+06] [1000000. 2000000.] [0.0001 0.001 ]\n"
                                "array([   0,    1,    2, ..., 1997, 1998, 1999], shape=(2000,))\n"));
  }

  // NumPy's own errors, with its messages (exit 1).
  void numpy_errors() {
    const std::pair<const char*, const char*> cases[] = {
        {"np.ones(3) + np.ones(4)", "ValueError: operands could not be broadcast together with shapes (3,) (4,) "},
        {"np.arange(3)[5]", "IndexError: index 5 is out of bounds for axis 0 with size 3"},
        {"np.zeros(3).reshape(4)", "ValueError: cannot reshape array of size 3 into shape (4,)"},
        {"np.mean(np.ones(3), axis=1)", "AxisError: axis 1 is out of bounds for array of dimension 1"},
        {"np.array([1, 2]) ** -1", "ValueError: Integers to negative integer powers are not allowed."},
        {"bool(np.ones(2))", "ValueError: The truth value of an array with more than one element is ambiguous. Use a.any() or a.all()"},
        {"np.array([[1, 2], [3]])", "ValueError: setting an array element with a sequence. The requested array has an "
                                    "inhomogeneous shape after 1 dimensions. The detected shape was (2,) + inhomogeneous part."},
        {"np.random.seed(-1)", "ValueError: Seed must be between 0 and 2**32 - 1"},
        // NumPy 2's wording (1.24 said "along dimension 1; dimension is 4 ...").
        {"np.ones((3, 4))[:, [True, False]]", "IndexError: boolean index did not match indexed array along axis 1; size of "
                                              "axis is 4 but size of corresponding boolean axis is 2"},
        {"torch.ones(2, requires_grad=True).numpy()",
         "RuntimeError: Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."},
        {"torch.cat([torch.ones(2), np.ones(2)])", "TypeError: expected Tensor as element 1 in argument 0, but got numpy.ndarray"},
    };
    for (const auto& [expr, message] : cases) {
      Ran r = run(std::string("import numpy as np\nimport torch\nx = ") + expr + "\n");
      QVERIFY2(r.exit == 1, expr);
      QVERIFY2(r.status.to_string().find(message) != std::string::npos, (std::string(expr) + ": " + r.status.to_string()).c_str());
      QVERIFY2(r.status.to_string().find("prog.py:3:") != std::string::npos, r.status.to_string().c_str());
    }
  }

  // Outside the subset: exit 3 at the line, naming what is missing.
  void refusals_name_the_attribute() {
    const std::pair<const char*, const char*> cases[] = {
        {"np.linalg.norm(np.ones(3))", "numpy.linalg"},
        {"np.fft.fft(np.ones(4))", "numpy.fft"},
        {"np.load('weights.npy')", "numpy.load"},
        {"np.genfromtxt('data.csv')", "numpy.genfromtxt"},
        {"np.memmap('data.bin')", "numpy.memmap"},
        {"np.random.default_rng(0).gamma(2.0)", "numpy.random.Generator.gamma"},
        {"np.random.exponential(1.0)", "numpy.random.exponential"},
        {"np.random.RandomState(0).poisson(3.0)", "numpy.random.RandomState.poisson"},
        {"np.ones(3).view(np.int64)", "ndarray.view"},
        {"np.ones(3).tofile('x.bin')", "ndarray.tofile"},
        {"np.array(['a', 1])", "a NumPy array of str and numbers"},
        {"np.array(['a']) + 'b'", "numpy.add of a NumPy string array"},
        {"np.zeros(2, dtype=np.uint64)", "numpy.uint64"},
        {"np.concatenate([np.zeros(2, dtype=np.uint16)] * 2)", "np.concatenate of a numpy.uint16 array"},
        {"np.ones((2, 2), dtype=np.uint16).sum(axis=0)", "along an axis (NumPy's result is a uint64 array"},
        {"torch.from_numpy(np.zeros(2, dtype=np.uint16))", "torch.from_numpy of a numpy.uint16 array (PyTorch 2.11 makes a torch.uint16"},
        {"torch.tensor(np.zeros(2, dtype=np.uint32))", "torch.tensor of a numpy.uint32 array"},
        {"np.array([-1.5]).astype(np.uint16)", "casting float64 values outside [0, 2**16)"},
        {"np.array(['7']).astype(bool)", "casting a NumPy string array to bool"},
        {"np.ones(2, dtype='complex64')", "the NumPy dtype 'complex64'"},
        {"np.sum(np.ones(3), out=np.zeros(()))", "np.sum(out=)"},
    };
    for (const auto& [expr, name] : cases) {
      Ran r = run(std::string("import numpy as np\nimport torch\nx = ") + expr + "\n");
      QVERIFY2(r.exit == 3, (std::string(expr) + ": exit " + std::to_string(r.exit) + " " + r.status.to_string()).c_str());
      QVERIFY2(r.status.to_string().find(name) != std::string::npos, (std::string(expr) + ": " + r.status.to_string()).c_str());
      QVERIFY2(r.status.to_string().find("prog.py:3:") != std::string::npos, r.status.to_string().c_str());
    }
  }

  // Dynamo would trace NumPy into torch ops; Kiln's capture does not, so
  // NumPy reached inside a compiled function is refused (the CLI compiles).
  void numpy_inside_compile_is_refused() {
    QTemporaryDir dir;
    const QString path = dir.filePath("prog.py");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("import numpy as np\nimport torch\n"
            "print(torch.compile(lambda t: t * 2)(torch.from_numpy(np.ones(2))))\n"
            "f = torch.compile(lambda t: t + torch.from_numpy(np.ones(2)))\n"
            "print(f(torch.ones(2)))\n");
    f.close();
    QProcess p;
    p.start(KILN_CLI_PATH, {"run", path, "--backend", "eager"});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 3);
    QCOMPARE(QString(p.readAllStandardOutput()), QString("tensor([2., 2.], dtype=torch.float64)\n"));
    QVERIFY2(p.readAllStandardError().contains("prog.py:5:7: NotImplementedError: NumPy inside a torch.compile'd function"),
             "the refusal names the line and what is refused");
  }

  // The devset's nn tutorial pattern: validation losses averaged with NumPy.
  void weighted_mean_of_losses() {
    Ran r = run(
        "import numpy as np\n"
        "losses, nums = zip(*[(2.5, 64), (2.25, 64), (2.0, 32)])\n"
        "val_loss = np.sum(np.multiply(losses, nums)) / np.sum(nums)\n"
        "print(0, val_loss, type(val_loss).__name__, f'{val_loss:.4f}')\n");
    QVERIFY2(r.exit == 0, r.err.c_str());
    QCOMPARE(r.out, std::string("0 2.3 float64 2.3000\n"));
  }
};

QTEST_GUILESS_MAIN(TestPythonNumpy)
#include "test_python_numpy.moc"
