// The torch.nn layers of nn_prelude_more.cpp, nn_prelude_rnn.cpp and
// nn_prelude_transformer.cpp (and nn.init.orthogonal_, torch.linalg.qr)
// against PyTorch 2.11: tests/data/nn_layers/program.py runs in Kiln's
// interpreter and its output is compared, one "== name" section per layer
// configuration, with what PyTorch printed for the same program
// (expected.txt): reprs exactly; seeded initial weights, outputs, input
// gradients and parameter gradients within 1e-4 relative (measured: within
// 5e-6, most within 3e-7). errors.txt pairs statements with PyTorch's error
// line for them.
#include "test_support.h"

#include <map>
#include <string>

#include "program_run_util.h"
#include "pytorch_output_compare.h"

namespace {

using kiln::test::compare_section;
using kiln::test::read_text;
using kiln::test::same_line;
using kiln::test::Sections;
using kiln::test::sections_of;

QString data_path(const char* name) { return QStringLiteral(KILN_SOURCE_DIR "/tests/data/nn_layers/") + name; }

struct Ran {
  int exit = -1;
  std::string out, err;
};

// In a fresh VM with eager autograd, as `kiln-cli run` runs it; `backend` "none"
// makes torch.compile return its argument.
Ran run(const std::string& source, const std::string& backend = "none") {
  kiln::test::ProgramRun p = kiln::test::run_program(source, backend);
  Ran r{p.code, p.out, p.err};
  if (r.err.empty() && !p.status.ok()) r.err = p.status.message();
  return r;
}

const Ran& program_run() {
  static const Ran r = run(read_text(data_path("program.py")));
  return r;
}

}  // namespace

class TestNnLayers : public QObject {
  Q_OBJECT

 private slots:
  void program_runs() {
    const Ran& r = program_run();
    QVERIFY2(r.exit == 0, r.err.c_str());
    Sections got = sections_of(r.out), want = sections_of(read_text(data_path("expected.txt")));
    QVERIFY(want.size() > 60);
    QStringList got_names, want_names;
    for (auto& s : got) got_names << s.first;
    for (auto& s : want) want_names << s.first;
    QCOMPARE(got_names, want_names);
  }

  // One row per layer configuration of program.py.
  void matches_pytorch_data() {
    QTest::addColumn<QStringList>("got");
    QTest::addColumn<QStringList>("want");
    Sections got = sections_of(program_run().out), want = sections_of(read_text(data_path("expected.txt")));
    std::map<QString, QStringList> by_name;
    for (auto& s : got) by_name[s.first] = s.second;
    for (auto& s : want) {
      if (s.first.isEmpty() && s.second.isEmpty()) continue;
      QString name = s.first.isEmpty() ? QStringLiteral("(start)") : s.first;
      QTest::newRow(qPrintable(name)) << by_name[s.first] << s.second;
    }
  }
  void matches_pytorch() {
    QFETCH(QStringList, got);
    QFETCH(QStringList, want);
    QVERIFY(!want.isEmpty());
    QString diff = compare_section(got, want, 1e-4);
    QVERIFY2(diff.isEmpty(), qPrintable(diff));
  }

  // The comparison is not vacuous: a weight fingerprint off by 2e-4 relative,
  // a permuted shape and a changed repr are each caught.
  void comparison_catches_differences() {
    QVERIFY(same_line("  p.weight [4] 1.2345678 2.5", "  p.weight [4] 1.2345679 2.5", 1e-4));
    QVERIFY(!same_line("  p.weight [4] 1.2345678 2.5", "  p.weight [4] 1.2348 2.5", 1e-4));
    QVERIFY(!same_line("  out0 [2, 3] 1.0 2.0", "  out0 [3, 2] 1.0 2.0", 1e-4));
    QVERIFY(!same_line("LSTM(3, 5, num_layers=2)", "LSTM(3, 5)", 1e-4));
    QVERIFY(!compare_section({"a 1.0"}, {"a 1.0", "b 2.0"}, 1e-4).isEmpty());
    // A seed change moves the fingerprints of the layer built under it: the
    // numbers depend on Kiln's generator drawing PyTorch's initial weights.
    const std::string source =
        kiln::test::replaced_once(read_text(data_path("program.py")), "torch.manual_seed(5)", "torch.manual_seed(6)");
    QVERIFY(!source.empty());
    Ran r = run(source);
    QCOMPARE(r.exit, 0);
    // Only the layer built right after the seed: check() reseeds before each forward.
    QCOMPARE(kiln::test::differing_sections(r.out, read_text(data_path("expected.txt")), 1e-4), QStringList{"rnncell"});
  }

  void errors_match_pytorch() {
    QStringList lines = QString::fromStdString(read_text(data_path("errors.txt"))).split('\n', Qt::SkipEmptyParts);
    QVERIFY(lines.size() > 40 && lines.size() % 2 == 1);
    QStringList failures;
    for (int i = 1; i + 1 < lines.size(); i += 2) {
      std::string statement = lines[i].toStdString(), expected = lines[i + 1].toStdString();
      Ran r = run("import torch\nimport torch.nn as nn\n" + statement + "\n");
      QStringList err = QString::fromStdString(r.err).split('\n', Qt::SkipEmptyParts);
      std::string got = err.isEmpty() ? std::string() : err.back().toStdString();
      bool ok = expected == "NOERROR" ? r.exit == 0 : (r.exit == 1 && got == expected);
      if (!ok)
        failures << QString::fromStdString(statement + "\n    expected: " + expected + "\n    got:      " + got +
                                           " (exit " + std::to_string(r.exit) + ")");
    }
    if (!failures.isEmpty()) QFAIL(qPrintable(failures.join('\n')));
  }

  // What Kiln refuses, with messages that say so.
  void refusals() {
    Ran r = run("import torch\na = torch.randn(4, 3, requires_grad=True)\nq, r = torch.linalg.qr(a)\n"
                "(q.sum() + r.sum()).backward()\n");
    QCOMPARE(r.exit, 3);  // Kiln's gap (no formula), not the program's error
    QVERIFY2(r.err.find("no derivative formula for aten::linalg_qr") != std::string::npos, r.err.c_str());
  }

  // Not in program.py (no PyTorch run of their own): ConvTranspose3d and the
  // Upsampling* aliases are the 1-D/2-D classes' code on F.conv_transpose3d and
  // F.interpolate, checked here against those functions.
  void by_construction() {
    Ran r = run(R"PY(import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
x = torch.randn(1, 2, 3, 4)
u = nn.UpsamplingBilinear2d(scale_factor=2)
print(u, bool((u(x) == F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)).all()))
n = nn.UpsamplingNearest2d(size=(5, 6))
print(n, bool((n(x) == F.interpolate(x, size=(5, 6))).all()))
c = nn.ConvTranspose3d(2, 4, 3, stride=2, padding=1, output_padding=1, groups=2)
print(c, list(c.weight.shape))
y = torch.randn(1, 2, 2, 3, 2)
print(list(c(y).shape), list(c(y, output_size=[3, 5, 3]).shape))
print(bool((c(y) == F.conv_transpose3d(y, c.weight, c.bias, 2, 1, 1, 2)).all()))
)PY");
    QVERIFY2(r.exit == 0, r.err.c_str());
    QCOMPARE(QString::fromStdString(r.out),
             QString("UpsamplingBilinear2d(scale_factor=2.0, mode='bilinear') True\n"
                     "UpsamplingNearest2d(size=(5, 6), mode='nearest') True\n"
                     "ConvTranspose3d(2, 4, kernel_size=(3, 3, 3), stride=(2, 2, 2), padding=(1, 1, 1), "
                     "output_padding=(1, 1, 1), groups=2) [2, 2, 3, 3, 3]\n"
                     "[1, 4, 4, 6, 4] [1, 4, 3, 5, 3]\nTrue\n"));
  }

  // PyTorch's TransformerEncoder runs inference with a left-aligned padding
  // mask on nested tensors (batch_first, no grad, no attention mask): padded
  // positions come back as zeros before the final norm. Elsewhere they keep
  // the masked computation's values.
  void nested_tensor_padding() {
    Ran r = run(R"PY(import torch
import torch.nn as nn
torch.manual_seed(0)
enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2, norm=nn.LayerNorm(8))
x = torch.randn(2, 4, 8)
kpm = torch.tensor([[False, False, True, True], [False, False, False, False]])
enc.eval()
with torch.no_grad():
    y = enc(x, src_key_padding_mask=kpm)
    right = enc(x, src_key_padding_mask=torch.tensor([[True, False, False, False], [False] * 4]))
y2 = enc(x, src_key_padding_mask=kpm)
print(enc.use_nested_tensor, y[0, 2:].tolist() == [enc.norm.bias.tolist()] * 2)
print(bool((y2[0, :2] - y[0, :2]).abs().max() < 1e-6), bool((y2[0, 2:] != y[0, 2:]).all()))
print(bool((right[0, 0] != enc.norm.bias).all()))
print(nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2).use_nested_tensor,
      nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2, enable_nested_tensor=False).use_nested_tensor)
)PY");
    QVERIFY2(r.exit == 0, r.err.c_str());
    QCOMPARE(QString::fromStdString(r.out), QString("True True\nTrue True\nTrue\nFalse False\n"));
    // Compiled (PyTorch skips the conversion while compiling when mask_check is set): no zeros.
    Ran c = run(R"PY(import torch
import torch.nn as nn
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2)
    def forward(self, x, kpm):
        return self.enc(x, src_key_padding_mask=kpm)
torch.manual_seed(0)
m = M()
m.eval()
x = torch.randn(2, 4, 8)
kpm = torch.tensor([[False, False, True, True], [False, False, False, False]])
with torch.no_grad():
    y = m(x, kpm)
    yc = torch.compile(m, backend="aot_eager")(x, kpm)
print(y[0, 2].abs().sum().item(), yc[0, 2].abs().sum().item() > 0, (y[:, :2] - yc[:, :2]).abs().max().item() < 1e-5)
)PY", "eager");
    QVERIFY2(c.exit == 0, c.err.c_str());
    QCOMPARE(QString::fromStdString(c.out), QString("0.0 True True\n"));
  }

  // RNNBase.all_weights and _flat_weights: the parameters by layer and direction, live.
  void rnn_weight_lists() {
    Ran r = run(R"PY(import torch
import torch.nn as nn
m = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
print([[tuple(w.shape) for w in ws] for ws in m.all_weights][2])
print(len(m._flat_weights), m._flat_weights[0] is m.weight_ih_l0, m._flat_weights_names[:4])
with torch.no_grad():
    m.weight_hh_l1.zero_()
print(float(m.all_weights[2][1].abs().sum()))
)PY");
    QVERIFY2(r.exit == 0, r.err.c_str());
    QCOMPARE(QString::fromStdString(r.out),
             QString("[(16, 8), (16, 4), (16,), (16,)]\n16 True ['weight_ih_l0', 'weight_hh_l0', 'bias_ih_l0', "
                     "'bias_hh_l0']\n0.0\n"));
  }

  // F.multi_head_attention_forward is the function MultiheadAttention calls.
  void functional_multi_head_attention() {
    Ran r = run(R"PY(import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
m = nn.MultiheadAttention(4, 2)
x = torch.randn(3, 1, 4)
a, w = m(x, x, x)
b, w2 = F.multi_head_attention_forward(x, x, x, 4, 2, m.in_proj_weight, m.in_proj_bias, None, None, False, 0.0,
                                       m.out_proj.weight, m.out_proj.bias)
print(bool((a == b).all()), bool((w == w2).all()), hasattr(nn, "multi_head_attention_forward"))
print(F._canonical_mask(torch.tensor([True, False]), "m", None, "", torch.float32))
)PY");
    QVERIFY2(r.exit == 0, r.err.c_str());
    QCOMPARE(QString::fromStdString(r.out), QString("True True False\ntensor([-inf, 0.])\n"));
  }

  // TransformerEncoder copies its layer (copy.deepcopy in PyTorch): equal
  // values, distinct parameters, nothing shared with the original.
  void clones_are_deep() {
    Ran r = run(R"PY(import torch
import torch.nn as nn
torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(4, 2, 8, 0.0)
enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
a = enc.layers[0].linear1.weight
b = enc.layers[1].linear1.weight
print(a is b, a is layer.linear1.weight, bool((a == b).all()), bool((a == layer.linear1.weight).all()))
print(type(a).__name__, a.requires_grad, len(list(enc.parameters())), len(list(layer.parameters())))
with torch.no_grad():
    a.add_(1.0)
print(bool((a == b).all()), bool((b == layer.linear1.weight).all()))
print(enc.layers[1].activation is torch.nn.functional.relu, type(enc.layers[1]).__name__)
)PY");
    QVERIFY2(r.exit == 0, r.err.c_str());
    QCOMPARE(QString::fromStdString(r.out), QString("False False True True\nParameter True 24 12\nFalse True\n"
                                                    "True TransformerEncoderLayer\n"));
  }
};

QTEST_GUILESS_MAIN(TestNnLayers)
#include "test_nn_layers.moc"
