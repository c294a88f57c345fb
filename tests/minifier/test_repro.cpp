// Repro files (minifier/repro.h): Kiln repro folders and zips round trip
// bit-exactly, PyTorch's minifier files and content store read, and damaged
// files fail with the file and line named.
#include <QtTest/QtTest>

#include <QTemporaryDir>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/graph/printer.h"
#include "core/io/safetensors.h"
#include "minifier/repro.h"
#include "minify_test_util.h"
#include "test_support.h"

using namespace kiln;
using namespace kiln::minify;
namespace fs = std::filesystem;

namespace {

// print_readable text with a column-major input and an integer one.
constexpr const char* kGraphText = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[8, 4][1, 8]cpu", w: "f32[16, 4][4, 1]cpu", b: "f32[16][1]cpu", idx: "i64[8][1]cpu"):
        permute = torch.ops.aten.permute.default(w, [1, 0]);  w = None
        addmm = torch.ops.aten.addmm.default(b, x, permute);  b = x = permute = None
        relu = torch.ops.aten.relu.default(addmm);  addmm = None
        mul = torch.ops.aten.mul.Tensor(relu, 2.5);  relu = None
        return (mul, idx)
)";

void write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes() || a.strides() != b.strides()) return false;
  Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.raw_data(), y.raw_data(), size_t(x.numel()) * x.itemsize()) == 0;
}

void expect_same_repro(const Repro& a, const Repro& b) {
  QCOMPARE(print_graph_module(b.graph), print_graph_module(a.graph));
  QCOMPARE(b.inputs.size(), a.inputs.size());
  for (size_t k = 0; k < a.inputs.size(); ++k)
    QVERIFY2(same_bits(a.inputs[k], b.inputs[k]), qPrintable(QString("input %1 differs").arg(k)));
  QCOMPARE(b.input_origins, a.input_origins);
  QCOMPARE(b.predicate_json, a.predicate_json);
}

// The error must name `file` (a suffix of the message's file) and, when
// `line` > 0, that line.
void expect_error_at(const Expected<Repro>& r, const std::string& file, int line, const std::string& needle) {
  QVERIFY2(!r.ok(), "expected an error");
  const Status& s = r.status();
  QVERIFY2(s.where().file.ends_with(file), qPrintable(QString::fromStdString(s.to_string())));
  if (line > 0) QVERIFY2(s.where().line == line, qPrintable(QString::fromStdString(s.to_string())));
  QVERIFY2(s.message().find(needle) != std::string::npos, qPrintable(QString::fromStdString(s.to_string())));
}

bool have_python3() { return QProcess::execute("python3", {"-c", "import zipfile"}) == 0; }

// Zips `folder` into `zip` under the top-level name `prefix` with python3's zipfile.
void python_zip(const std::string& folder, const std::string& zip, const std::string& prefix, bool deflate) {
  QString script = QString(
      "import os, sys, zipfile\n"
      "src, out, prefix, method = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]\n"
      "with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED if method == 'deflate' else zipfile.ZIP_STORED) as z:\n"
      "    for name in sorted(os.listdir(src)):\n"
      "        z.write(os.path.join(src, name), prefix + name)\n");
  int rc = QProcess::execute("python3", {"-c", script, QString::fromStdString(folder), QString::fromStdString(zip),
                                         QString::fromStdString(prefix), deflate ? "deflate" : "stored"});
  QCOMPARE(rc, 0);
}

Repro sample_repro(const QTemporaryDir& tmp) {
  std::string path = tmp.filePath("graph.txt").toStdString();
  write(path, kGraphText);
  Expected<Repro> r = read_repro(path);
  if (!r) qFatal("%s", r.status().to_string().c_str());
  r->predicate_json = "{\"check\": \"accuracy\", \"tolerance\": 0.001}";
  return std::move(*r);
}

}  // namespace

class TestRepro : public QObject {
  Q_OBJECT
 private slots:
  void graph_text_gets_seeded_inputs() {
    QTemporaryDir tmp;
    Repro r = sample_repro(tmp);
    QCOMPARE(r.inputs.size(), size_t(4));
    QCOMPARE(r.input_origins, (std::vector<std::string>(4, "random (seed 0)")));
    // The annotation's layout, column-major included.
    QCOMPARE(r.inputs[0].strides(), (Shape{1, 8}));
    QCOMPARE(r.inputs[3].dtype(), DType::Int64);
    // rand_strided: integer inputs are zeros, floats are normal draws.
    for (double v : test::values(r.inputs[3])) QCOMPARE(v, 0.0);
    std::vector<double> x = test::values(r.inputs[0]);
    QVERIFY(std::any_of(x.begin(), x.end(), [](double v) { return v < 0; }));
    // Same seed, same numbers.
    Expected<std::vector<Tensor>> again = random_inputs(r.graph);
    QVERIFY(again.ok());
    for (size_t k = 0; k < r.inputs.size(); ++k) QVERIFY(same_bits(r.inputs[k], (*again)[k]));
  }

  void folder_round_trip_is_bit_exact() {
    QTemporaryDir tmp;
    Repro r = sample_repro(tmp);
    std::string dir = tmp.filePath("out/repro").toStdString();
    Status st = write_kiln_repro(dir, r);
    QVERIFY2(st.ok(), st.to_string().c_str());
    for (const char* f : {"graph.txt", "inputs.safetensors", "predicate.json", "README.txt"})
      QVERIFY2(fs::exists(fs::path(dir) / f), f);
    QVERIFY(slurp(dir + "/README.txt").find("kiln-cli repro run " + fs::absolute(dir).string() + "\n") !=
            std::string::npos);
    QCOMPARE(slurp(dir + "/graph.txt"), print_graph_module(r.graph));
    Expected<Repro> back = read_repro(dir);
    QVERIFY2(back.ok(), back.status().to_string().c_str());
    expect_same_repro(r, *back);
    QCOMPARE(back->path, dir);
    // Nothing staged is left beside it.
    QCOMPARE(std::distance(fs::directory_iterator(fs::path(dir).parent_path()), fs::directory_iterator()), 1L);
  }

  void rewriting_replaces_a_repro_but_not_other_folders() {
    QTemporaryDir tmp;
    Repro r = sample_repro(tmp);
    std::string dir = tmp.filePath("repro").toStdString();
    QVERIFY(write_kiln_repro(dir, r).ok());
    r.predicate_json = "{\"check\": \"crash\"}";
    r.inputs[2] = Tensor::full({16}, Scalar(1.5), DType::Float32);
    QVERIFY(write_kiln_repro(dir, r).ok());
    Expected<Repro> back = read_repro(dir);
    QVERIFY(back.ok());
    expect_same_repro(r, *back);
    // graph.txt of sample_repro and the repro: nothing staged or moved aside is left.
    QCOMPARE(std::distance(fs::directory_iterator(tmp.path().toStdString()), fs::directory_iterator()), 2L);

    std::string other = tmp.filePath("notes").toStdString();
    write(other + "/todo.txt", "keep me");
    Status refused = write_kiln_repro(other, r);
    QVERIFY(!refused.ok());
    QVERIFY2(refused.message().find("refusing") != std::string::npos, refused.message().c_str());
    QCOMPARE(slurp(other + "/todo.txt"), std::string("keep me"));

    Repro wrong = r;
    wrong.inputs.pop_back();
    QVERIFY(!write_kiln_repro(tmp.filePath("wrong").toStdString(), wrong).ok());
    QVERIFY(!fs::exists(tmp.filePath("wrong").toStdString()));
  }

  void zipped_repros_read_like_folders() {
    if (!have_python3()) QSKIP("python3 (zipfile) is not installed");
    QTemporaryDir tmp;
    Repro r = sample_repro(tmp);
    std::string dir = tmp.filePath("repro").toStdString();
    QVERIFY(write_kiln_repro(dir, r).ok());
    for (bool deflate : {false, true}) {
      for (std::string prefix : {"", "repro/"}) {
        std::string zip = tmp.path().toStdString() + "/r_" + (deflate ? "deflate" : "stored") + (prefix.empty() ? "" : "_prefixed") + ".zip";
        python_zip(dir, zip, prefix, deflate);
        Expected<Repro> back = read_repro(zip);
        QVERIFY2(back.ok(), back.status().to_string().c_str());
        expect_same_repro(r, *back);
      }
    }
    // A zip without the extension is still recognised by its signature.
    std::string plain = tmp.filePath("repro_archive").toStdString();
    fs::copy_file(tmp.path().toStdString() + "/r_deflate_prefixed.zip", plain);
    QVERIFY(read_repro(plain).ok());
  }

  void damaged_zips_are_named() {
    if (!have_python3()) QSKIP("python3 (zipfile) is not installed");
    QTemporaryDir tmp;
    Repro r = sample_repro(tmp);
    std::string dir = tmp.filePath("repro").toStdString();
    QVERIFY(write_kiln_repro(dir, r).ok());
    std::string zip = tmp.filePath("r.zip").toStdString();
    python_zip(dir, zip, "", false);
    std::string bytes = slurp(zip);

    std::string truncated = tmp.filePath("truncated.zip").toStdString();
    write(truncated, bytes.substr(0, bytes.size() / 2));
    expect_error_at(read_repro(truncated), "truncated.zip", 0, "zip");

    // Flip a byte inside graph.txt's stored data: the CRC catches it.
    std::string corrupt = bytes;
    size_t at = corrupt.find("class GraphModule");
    QVERIFY(at != std::string::npos);
    corrupt[at + 2] = 'X';
    std::string crc = tmp.filePath("crc.zip").toStdString();
    write(crc, corrupt);
    expect_error_at(read_repro(crc), "crc.zip", 0, "CRC mismatch");

    // A zip that is not a repro.
    std::string other = tmp.filePath("other").toStdString();
    write(other + "/hello.txt", "hi");
    std::string other_zip = tmp.filePath("other.zip").toStdString();
    python_zip(other, other_zip, "", true);
    expect_error_at(read_repro(other_zip), "other.zip", 0, "no graph.txt");
  }

  void every_reference_minifier_file_reads() {
    const std::string ref = test::reference_dir() + "/minifier";
    struct Case {
      const char* file;
      size_t ops, inputs;
    };
    for (Case c : {Case{"accuracy_cuda/repro.py", 1, 1}, Case{"accuracy_cuda/minifier_launcher.py", 27, 7},
                   Case{"accuracy_cpu/repro.py", 25, 7}, Case{"accuracy_cpu/minifier_launcher.py", 27, 7},
                   Case{"compile_error_cpu/minifier_launcher.py", 27, 7}}) {
      std::string path = ref + "/" + c.file;
      Expected<Repro> r = read_repro(path);
      QVERIFY2(r.ok(), qPrintable(QString::fromStdString(path + ": " + r.status().to_string())));
      QCOMPARE(count_nodes(r->graph, OpKind::CallFunction), c.ops);
      QCOMPARE(r->inputs.size(), c.inputs);
      // No storage folder is shipped with the reference files: every input is drawn.
      QCOMPARE(r->input_origins, std::vector<std::string>(c.inputs, "random (seed 0)"));
      // Meta vals were filled in from the inputs for every call node.
      for (const Node& n : r->graph.nodes)
        if (n.op == OpKind::CallFunction && n.target != "operator.getitem")
          QVERIFY2(n.meta.val.kind != Val::Kind::None, n.name.c_str());
    }
    Expected<Repro> one = read_repro(ref + "/accuracy_cuda/repro.py");
    QCOMPARE(one->inputs[0].sizes(), (Shape{8, 64}));
    QCOMPARE(one->graph[one->graph.find("relu")].target, std::string("aten::relu.default"));
    Expected<Repro> launcher = read_repro(ref + "/accuracy_cpu/minifier_launcher.py");
    QCOMPARE(launcher->inputs[0].sizes(), (Shape{64, 32}));
    QCOMPARE(launcher->inputs[6].sizes(), (Shape{16}));
  }

  void pytorch_content_store_is_read() {
    if (!have_python3()) QSKIP("python3 (zipfile) is not installed");
    QTemporaryDir tmp;
    std::string dir = tmp.path().toStdString();
    // A repro.py as after_aot writes it, its first storage saved in the content store.
    write(dir + "/repro.py", R"(import torch
from torch import tensor, device
class Repro(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()



    def forward(self, a, b):
        add = torch.ops.aten.add.Tensor(a, b);  a = b = None
        return (add,)

def load_args(reader):
    buf0 = reader.storage('00112233445566778899aabbccddeeff00112233', 48)
    reader.tensor(buf0, (2, 3), (1, 2), storage_offset=1, is_leaf=True)  # a
    buf1 = reader.storage('ffeeddccbbaa99887766554433221100ffeeddcc', 24)
    reader.tensor(buf1, (6,), is_leaf=True)  # b
load_args._version = 0
mod = Repro()
if __name__ == '__main__':
    from torch._dynamo.repro.after_aot import run_repro
    with torch.no_grad():
        run_repro(mod, load_args, accuracy=True, command='run', save_dir='/nonexistent/checkpoints', tracing_mode='real', check_str=None)
)");
    // torch.save's layout: <archive>/data.pkl, byteorder, data/0 (the bytes); stored entries.
    std::vector<float> values(12);
    for (size_t i = 0; i < values.size(); ++i) values[i] = 0.25f * float(i) - 1.0f;
    std::string raw(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
    write(dir + "/raw.bin", raw);
    QString script(
        "import sys, zipfile\n"
        "h = sys.argv[2]\n"
        "with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_STORED) as z:\n"
        "    z.writestr(h + '/data.pkl', b'not read')\n"
        "    z.writestr(h + '/byteorder', b'little')\n"
        "    z.writestr(h + '/data/0', open(sys.argv[3], 'rb').read())\n"
        "    z.writestr(h + '/version', b'3')\n"
        "    z.writestr(h + '/.data/serialization_id', b'123')\n");
    fs::create_directories(dir + "/checkpoints/storages");
    QCOMPARE(QProcess::execute("python3", {"-c", script,
                                           QString::fromStdString(dir + "/checkpoints/storages/00112233445566778899aabbccddeeff00112233"),
                                           "00112233445566778899aabbccddeeff00112233",
                                           QString::fromStdString(dir + "/raw.bin")}),
             0);
    Expected<Repro> r = read_repro(dir + "/repro.py");
    QVERIFY2(r.ok(), r.status().to_string().c_str());
    QCOMPARE(r->input_origins, (std::vector<std::string>{"stored", "random (seed 0)"}));
    // a = storage[1 + i + 2 j] as a (2, 3) view with strides (1, 2).
    QCOMPARE(r->inputs[0].strides(), (Shape{1, 2}));
    KILN_COMPARE_VALUES(r->inputs[0], {values[1], values[3], values[5], values[2], values[4], values[6]});
    QCOMPARE(r->inputs[1].sizes(), (Shape{6}));

    // A storage whose file holds fewer bytes than load_args says is an error naming the file.
    write(dir + "/raw.bin", raw.substr(0, 8));
    QCOMPARE(QProcess::execute("python3", {"-c", script,
                                           QString::fromStdString(dir + "/checkpoints/storages/00112233445566778899aabbccddeeff00112233"),
                                           "00112233445566778899aabbccddeeff00112233",
                                           QString::fromStdString(dir + "/raw.bin")}),
             0);
    expect_error_at(read_repro(dir + "/repro.py"), "00112233445566778899aabbccddeeff00112233", 0, "holds 8 bytes");
  }

  void malformed_kiln_repros_name_file_and_line() {
    QTemporaryDir tmp;
    Repro r = sample_repro(tmp);
    std::string dir = tmp.filePath("repro").toStdString();
    QVERIFY(write_kiln_repro(dir, r).ok());
    const std::string graph = slurp(dir + "/graph.txt");
    const std::string inputs = slurp(dir + "/inputs.safetensors");

    // Truncated graph: cut in the middle of the addmm line (line 4).
    size_t cut = graph.find("addmm.default(b, x") + 20;
    write(dir + "/graph.txt", graph.substr(0, cut) + "\n");
    // The parser reports the unclosed call where the text ends, on line 5.
    expect_error_at(read_repro(dir), "repro/graph.txt", 5, "never closed");
    write(dir + "/graph.txt", graph);

    write(dir + "/inputs.safetensors", "this is not a safetensors file at all");
    expect_error_at(read_repro(dir), "repro/inputs.safetensors", 0, "");
    write(dir + "/inputs.safetensors", inputs.substr(0, inputs.size() - 10));
    expect_error_at(read_repro(dir), "repro/inputs.safetensors", 0, "");
    fs::remove(dir + "/inputs.safetensors");
    expect_error_at(read_repro(dir), "repro/inputs.safetensors", 0, "missing");
    write(dir + "/inputs.safetensors", inputs);

    write(dir + "/predicate.json", "{\n  \"check\": \"accuracy\",\n  \"tolerance\": 1e-3,,\n}\n");
    expect_error_at(read_repro(dir), "repro/predicate.json", 3, "bad JSON");
    write(dir + "/predicate.json", "[1, 2]\n");
    expect_error_at(read_repro(dir), "repro/predicate.json", 1, "JSON object");
    fs::remove(dir + "/predicate.json");
    QVERIFY(read_repro(dir).ok());  // the predicate is optional

    // An input whose shape disagrees with its placeholder's annotation.
    NamedTensors wrong;
    wrong.emplace_back("x", Tensor::zeros({8, 5}, DType::Float32));
    wrong.emplace_back("w", r.inputs[1].contiguous());
    wrong.emplace_back("b", r.inputs[2]);
    wrong.emplace_back("idx", r.inputs[3]);
    QVERIFY(write_safetensors(dir + "/inputs.safetensors", wrong).ok());
    expect_error_at(read_repro(dir), "repro/inputs.safetensors", 0, "graph.txt:2) is f32[8, 4][1, 8]cpu");
    wrong.erase(wrong.begin());
    QVERIFY(write_safetensors(dir + "/inputs.safetensors", wrong).ok());
    expect_error_at(read_repro(dir), "repro/inputs.safetensors", 0, "no tensor 'x'");

    fs::remove(dir + "/graph.txt");
    expect_error_at(read_repro(dir), "repro", 0, "no graph.txt");
    expect_error_at(read_repro(tmp.filePath("nowhere").toStdString()), "nowhere", 0, "no such file");
  }

  // A dynamic-shape repro: the symint replayed at its recorded value, the
  // integer arithmetic on it folded, sizes written as expressions evaluated.
  void dynamic_shape_repro_replays_at_its_hints() {
    QTemporaryDir tmp;
    std::string path = tmp.filePath("repro.py").toStdString();
    write(path, R"(import torch
class Repro(torch.nn.Module):
    def forward(self, arg0_1, arg1_1, arg2_1):
        mul = arg0_1 * 2
        view = torch.ops.aten.view.default(arg1_1, [mul, 4]);  arg1_1 = mul = None
        add = torch.ops.aten.add.Tensor(view, arg2_1);  view = arg2_1 = None
        return (add,)

def load_args(reader):
    reader.symint(3)  # arg0_1
    buf0 = reader.storage(None, 32*s0)
    reader.tensor(buf0, (8*s0,), is_leaf=True)  # arg1_1
    buf1 = reader.storage(None, 3136*8)
    reader.tensor(buf1, (4,), is_leaf=True)  # arg2_1
)");
    Expected<Repro> r = read_repro(path);
    QVERIFY2(r.ok(), r.status().to_string().c_str());
    QCOMPARE(r->specialized, (std::vector<std::pair<std::string, int64_t>>{{"arg0_1 (s0)", 3}}));
    QCOMPARE(r->inputs.size(), size_t(2));
    QCOMPARE(r->inputs[0].sizes(), (Shape{24}));
    QCOMPARE(r->graph.find("arg0_1"), kNoNode);
    QCOMPARE(r->graph.find("mul"), kNoNode);
    QCOMPARE(r->graph[r->graph.find("view")].args[1].items[0].i, int64_t(6));
    test::CliRun run = test::run_cli({"repro", "run", QString::fromStdString(path), "--check", "accuracy"}, 120000);
    QCOMPARE(run.code, 0);
    QVERIFY2(run.out.contains("symbolic sizes replayed at the values load_args recorded: arg0_1 (s0) = 3"), run.out.constData());
  }

  // load_args as people post it: a formatter's calls spread over lines, the
  // version set inside the function (older files), an empty body.
  void formatted_load_args_are_read() {
    QTemporaryDir tmp;
    std::string path = tmp.filePath("repro.py").toStdString();
    write(path, R"(import torch
from torch import tensor, device
class Repro(torch.nn.Module):
    def forward(self, a, b):
        add = torch.ops.aten.add.Tensor(a, b);  a = b = None
        return (add,)

def load_args(reader):
    buf0 = reader.storage(
        "6916e7f050fea19610e426255220b0187cd89bce", 48, device=device(type="cuda", index=0)
    )
    reader.tensor(
        buf0, (3, 4), is_leaf=True
    )  # a
    buf1 = reader.storage(None, 16)
    reader.tensor(buf1, (4,), is_leaf=True)  # b
    load_args._version = 0
)");
    Expected<Repro> r = read_repro(path);
    QVERIFY2(r.ok(), r.status().to_string().c_str());
    QCOMPARE(r->inputs.size(), size_t(2));
    QCOMPARE(r->inputs[0].sizes(), (Shape{3, 4}));
    write(path, R"(import torch
class Repro(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer('_tensor_constant0', torch.ones([2, 3]))

    def forward(self):
        _tensor_constant0 = self._tensor_constant0
        neg = torch.ops.aten.neg.default(_tensor_constant0);  _tensor_constant0 = None
        return (neg,)

def load_args(reader):
    load_args._version = 0
)");
    r = read_repro(path);
    QVERIFY2(r.ok(), r.status().to_string().c_str());
    QCOMPARE(r->inputs.size(), size_t(1));  // the constant, as an input
    // An overload packet (torch.ops.aten.round(x)) names the overload its arguments call.
    write(path, R"(import torch
class Repro(torch.nn.Module):
    def forward(self, a):
        round_1 = torch.ops.aten.round(a);  a = None
        return (round_1,)

def load_args(reader):
    buf0 = reader.storage(None, 16)
    reader.tensor(buf0, (4,), is_leaf=True)  # a
)");
    r = read_repro(path);
    QVERIFY2(r.ok(), r.status().to_string().c_str());
    QCOMPARE(test::op_targets(r->graph), std::vector<std::string>{"aten::round.default"});
  }

  // The 2022 style: no load_args, a module-level args list drawn with rand_strided.
  void args_list_style_is_read() {
    QTemporaryDir tmp;
    std::string path = tmp.filePath("repro.py").toStdString();
    write(path, R"(import torch
from torch._dynamo.testing import rand_strided
from torch.fx.experimental.proxy_tensor import make_fx

args = [((2, 3), (1, 2), torch.float32, 'cpu', True),
        ((3,), (1,), torch.int64, 'cuda')]
args = [rand_strided(sh, st, dt, dev).requires_grad_(rg) for (sh, st, dt, dev, rg) in args]

class Repro(torch.nn.Module):
    def forward(self, a, b):
        convert = torch.ops.prims.convert_element_type.default(b, torch.float32);  b = None
        add = torch.ops.aten.add.Tensor(a, convert);  a = convert = None
        return (add,)

mod = make_fx(Repro())(*args)
)");
    Expected<Repro> r = read_repro(path);
    QVERIFY2(r.ok(), r.status().to_string().c_str());
    QCOMPARE(r->inputs.size(), size_t(2));
    QCOMPARE(r->inputs[0].sizes(), (Shape{2, 3}));
    QCOMPARE(r->inputs[0].strides(), (Shape{1, 2}));
    QCOMPARE(r->inputs[1].dtype(), DType::Int64);
    QCOMPARE(r->input_origins, (std::vector<std::string>{"random (seed 0)", "random (seed 0)"}));

    // The same inputs appended one by one, and made by a module-level reader.
    const std::string graph = R"(
class Repro(torch.nn.Module):
    def forward(self, a, b):
        convert = torch.ops.prims.convert_element_type.default(b, torch.float32);  b = None
        add = torch.ops.aten.add.Tensor(a, convert);  a = convert = None
        return (add,)
)";
    write(path, "import torch\nfrom torch._dynamo.testing import rand_strided\n" + graph +
                    "args = []\n"
                    "args.append(rand_strided((2, 3), (1, 2), torch.float32, 'cpu'))  # shape (2, 3), stride (1, 2)\n"
                    "args.append(rand_strided((3,), (1,), torch.int64, 'cpu'))  # shape (3,), stride (1,)\n"
                    "mod = make_fx(Repro(), tracing_mode='real')(*args)\n");
    Expected<Repro> appended = read_repro(path);
    QVERIFY2(appended.ok(), appended.status().to_string().c_str());
    QCOMPARE(appended->inputs.size(), size_t(2));
    QCOMPARE(appended->inputs[0].strides(), (Shape{1, 2}));
    QCOMPARE(appended->inputs[1].dtype(), DType::Int64);
    write(path, "import torch\nfrom torch._dynamo.debug_utils import InputReader\n" + graph +
                    "reader = InputReader(save_dir=None)\n"
                    "buf0 = reader.storage(None, 24)\n"
                    "t0 = reader.tensor(buf0, (2, 3), (1, 2))\n"
                    "buf1 = reader.storage(None, 24, dtype_hint=torch.int64)\n"
                    "t1 = reader.tensor(buf1, (3,), dtype=torch.int64)\n"
                    "args = [t0, t1]\n"
                    "mod = make_fx(Repro(), tracing_mode='symbolic')(*args)\n");
    Expected<Repro> module_reader = read_repro(path);
    QVERIFY2(module_reader.ok(), module_reader.status().to_string().c_str());
    QCOMPARE(module_reader->inputs.size(), size_t(2));
    QCOMPARE(module_reader->inputs[0].sizes(), (Shape{2, 3}));
    QCOMPARE(module_reader->inputs[1].dtype(), DType::Int64);
  }

  // A graph that returns a multi-output node itself, as 2022's make_fx
  // repros do with var_mean: decompose stopped on it ("whose outputs are only
  // read through getitem"); its parts are the outputs.
  void returning_a_whole_tuple_replays() {
    QTemporaryDir tmp;
    std::string path = tmp.filePath("repro.py").toStdString();
    write(path, R"(import torch
from torch._dynamo.testing import rand_strided
from torch.fx.experimental.proxy_tensor import make_fx

class Repro(torch.nn.Module):
    def forward(self, add):
        var_mean = torch.ops.aten.var_mean.correction(add, [2], correction = 0, keepdim = True);  add = None
        return (var_mean,)

args = [((1, 4, 8), (32, 8, 1), torch.float32, 'cpu')]
args = [rand_strided(sh, st, dt, dev) for (sh, st, dt, dev) in args]
mod = make_fx(Repro())(*args)
)");
    test::CliRun run = test::run_cli({"repro", "run", QString::fromStdString(path), "--check", "accuracy"}, 120000);
    QVERIFY2(run.code == 0, run.out.constData());
    QVERIFY2(run.out.contains("no longer fails (2 outputs agree)"), run.out.constData());
    test::CliRun stages = test::run_cli({"stages", QString::fromStdString(path)}, 120000);
    QVERIFY2(stages.code == 0, stages.err.constData());
  }

  // An after-dynamo repro: forward is Dynamo's torch-level graph, lowered to
  // ATen by Kiln's to_aten; each ATen node keeps its torch-level line, and
  // the lowered graph replays. A submodule call is refused by node and line.
  void after_dynamo_repro_lowers_to_aten() {
    QTemporaryDir tmp;
    std::string path = tmp.filePath("repro.py").toStdString();
    const std::string head = R"(import torch
from torch import tensor, device
import torch.fx as fx
from torch._dynamo.testing import rand_strided
from math import inf
from torch._dynamo.debug_utils import run_fwd_maybe_bwd

args = [((6, 5), (5, 1), torch.float32, 'cpu', False), ((4, 5), (5, 1), torch.float32, 'cpu', True), ((4,), (1,), torch.float32, 'cpu', True)]
args = [rand_strided(sh, st, dt, dev).requires_grad_(rg) for (sh, st, dt, dev, rg) in args]

from torch.nn import *
class Repro(torch.nn.Module):
    def __init__(self):
        super().__init__()

)";
    const std::string forward = R"(    def forward(self, L_x_ : torch.Tensor, L_w_ : torch.Tensor, L_b_ : torch.Tensor):
        l_x_ = L_x_
        l_w_ = L_w_
        l_b_ = L_b_
        linear = torch._C._nn.linear(l_x_, l_w_, l_b_);  l_x_ = l_w_ = l_b_ = None
        gelu = torch._C._nn.gelu(linear, approximate = 'tanh');  linear = None
        expand = gelu.expand(2, 6, 4)
        softmax = torch.softmax(expand, dim = -1);  expand = None
        mean = softmax.mean(dim = 0);  softmax = None
        add = gelu + mean;  gelu = mean = None
        return (add,)
)";
    const std::string tail = R"(
mod = Repro()
opt_mod = torch._dynamo.optimize("inductor")(mod)
with torch.cuda.amp.autocast(enabled=False):
    ref = run_fwd_maybe_bwd(mod, args)
    res = run_fwd_maybe_bwd(opt_mod, args)
)";
    write(path, head + forward + tail);
    Expected<Repro> r = read_repro(path);
    QVERIFY2(r.ok(), r.status().to_string().c_str());
    QVERIFY(r->lowered_from_torch);
    QCOMPARE(r->inputs.size(), size_t(3));
    int gelu_line = 0;
    for (const Node& n : r->graph.nodes) {
      if (n.op != OpKind::CallFunction) continue;
      QVERIFY2(n.target.find("::") != std::string::npos || n.target == "operator.getitem", n.target.c_str());
      if (n.target == "aten::gelu.default") gelu_line = r->node_lines.at(n.name);
    }
    QCOMPARE(gelu_line, 21);  // the torch-level gelu's line
    test::CliRun run = test::run_cli({"repro", "run", QString::fromStdString(path), "--check", "accuracy"}, 120000);
    QVERIFY2(run.code == 0, run.out.constData());
    QVERIFY2(run.out.contains("lowered to ATen by Kiln's to_aten"), run.out.constData());

    // Older after-dynamo files keep submodules and parameters in __init__
    // (moved to the GPU there): the class runs in Kiln's interpreter and its
    // forward is captured, parameters lifted to inputs after the file's own.
    const std::string module_forward =
        "    def forward(self, L_x_ : torch.Tensor, L_w_ : torch.Tensor, L_b_ : torch.Tensor):\n"
        "        l_x_ = L_x_\n"
        "        l__self___fc = self.L__self___fc(l_x_);  l_x_ = None\n"
        "        mul = l__self___fc * self.L__self___scale;  l__self___fc = None\n"
        "        return (mul,)\n";
    write(path, head + "        self.L__self___fc = Linear(in_features=5, out_features=4, bias=True).cuda()\n" +
                    "        self.L__self___scale = torch.nn.Parameter(torch.randn([4], dtype=torch.float32)).cuda()\n\n" +
                    module_forward + tail);
    Expected<Repro> m = read_repro(path);
    QVERIFY2(m.ok(), m.status().to_string().c_str());
    QVERIFY(m->lowered_from_torch);
    std::vector<std::string> targets = test::op_targets(m->graph);
    QVERIFY2(std::find(targets.begin(), targets.end(), "aten::mul.Tensor") != targets.end(), "the scale is applied");
    int module_state = 0;
    for (const std::string& o : m->input_origins) module_state += o == "module state (Repro.__init__, initialized by Kiln's layers)";
    QCOMPARE(module_state, 3);  // the layer's weight and bias, the scale
    run = test::run_cli({"repro", "run", QString::fromStdString(path), "--check", "accuracy"}, 120000);
    QVERIFY2(run.code == 0, run.out.constData());
    // Run under autocast, the graph's dtypes are not the ones PyTorch computed in: refused at the run line.
    write(path, head + forward +
                    "\nmod = Repro()\nif __name__ == '__main__':\n"
                    "    run_repro(mod, load_args, accuracy=False, command='run', save_dir=None, autocast=True, backend='inductor')\n");
    expect_error_at(read_repro(path), "repro.py", 30, "an after-dynamo repro run under autocast (autocast=True)");
    // A layer past the input byte bound is refused before it is made.
    write(path, head + "        self.L__self___fc = Linear(in_features=5, out_features=4000000000, bias=True)\n\n" + module_forward + tail);
    expect_error_at(read_repro(path), "repro.py", 12, "running Repro's class in Kiln's interpreter");
    // A layer Kiln's interpreter does not have is refused, naming the class's line.
    write(path, head + "        self.L__self___fc = FrobnicatingLayer(5)\n\n" + module_forward + tail);
    expect_error_at(read_repro(path), "repro.py", 12, "running Repro's class in Kiln's interpreter");
  }

  // Constants of Repro.__init__: literals read exactly, as inputs after the file's own;
  // inductor's iota replays as the arange it is.
  void init_constants_and_iota() {
    QTemporaryDir tmp;
    std::string path = tmp.filePath("repro.py").toStdString();
    const std::string head = R"(import torch
from torch import tensor, device
class Repro(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
)";
    const std::string body = R"(
    def forward(self, x):
        _tensor_constant0 = self._tensor_constant0
        _tensor_constant1 = self._tensor_constant1
        iota = torch.ops.prims.iota.default(3, start = 2, step = 3, dtype = torch.int64, device = device(type='cpu'), requires_grad = False)
        convert = torch.ops.prims.convert_element_type.default(iota, torch.float32);  iota = None
        add = torch.ops.aten.add.Tensor(x, _tensor_constant0);  x = _tensor_constant0 = None
        mul = torch.ops.aten.mul.Tensor(add, _tensor_constant1);  add = _tensor_constant1 = None
        add_1 = torch.ops.aten.add.Tensor(mul, convert);  mul = convert = None
        return (add_1,)

def load_args(reader):
    buf0 = reader.storage(None, 12)
    reader.tensor(buf0, (3,), is_leaf=True)  # x
)";
    // A module assignment is no constant (an after-dynamo file's; unused here).
    write(path, head + "        self.lin = Linear(in_features=3, out_features=3, bias=True)\n"
                       "        self.register_buffer('_tensor_constant0', tensor([0.5000, -1.0000, 2.0000]))\n"
                       "        self.register_buffer('_tensor_constant1', torch.full([3], 2.0))\n" + body);
    Expected<Repro> r = read_repro(path);
    QVERIFY2(r.ok(), r.status().to_string().c_str());
    QCOMPARE(r->inputs.size(), size_t(3));
    KILN_COMPARE_VALUES(r->inputs[1], {0.5f, -1.0f, 2.0f});
    KILN_COMPARE_VALUES(r->inputs[2], {2.0f, 2.0f, 2.0f});
    QCOMPARE(r->input_origins[1], std::string("constant (Repro.__init__, line 7)"));
    QCOMPARE(r->graph[r->graph.find("_tensor_constant1")].op, OpKind::Placeholder);
    test::CliRun run = test::run_cli({"repro", "run", QString::fromStdString(path), "--check", "accuracy"}, 120000);
    QCOMPARE(run.code, 0);  // iota runs: the graph replays in every backend

    // torch.randn at __init__ draws new values at every Repro() in PyTorch
    // too: Kiln draws its own, seeded, and says so; torch.empty is refused.
    write(path, head + "        self.register_buffer('_tensor_constant0', torch.randn([3], dtype=torch.float64))\n"
                       "        self.register_buffer('_tensor_constant1', tensor([1., 2., 3.]))\n" + body);
    Expected<Repro> drawn = read_repro(path);
    QVERIFY2(drawn.ok(), drawn.status().to_string().c_str());
    QCOMPARE(drawn->inputs[1].dtype(), DType::Float64);
    QCOMPARE(drawn->inputs[1].sizes(), (Shape{3}));
    QVERIFY(test::values(drawn->inputs[1]) != (std::vector<double>{0, 0, 0}));
    QCOMPARE(drawn->input_origins[1], std::string("random (torch.randn in Repro.__init__, line 6, seed 0)"));
    write(path, head + "        self.register_buffer('_tensor_constant0', torch.empty([3]))\n"
                       "        self.register_buffer('_tensor_constant1', tensor([1., 2., 3.]))\n" + body);
    expect_error_at(read_repro(path), "repro.py", 6, "the file does not hold its values");
  }

  // What Kiln cannot replay is named with its line: AOTInductor's files load
  // their graph from a .pt2; an op Kiln lacks whose items the graph reads.
  void unreplayable_constructs_are_named() {
    QTemporaryDir tmp;
    std::string path = tmp.filePath("repro.py").toStdString();
    write(path, R"(import torch
import torch._inductor.config
torch._inductor.config.aot_inductor.dump_aoti_minifier = True

exported_program = torch.export.load('/somewhere/minifier/checkpoints/exported_program.pt2')
if __name__ == '__main__':
    from torch._dynamo.repro.aoti import run_repro
    run_repro(exported_program, config_patches={}, accuracy=False, command='run', save_dir=None, check_str=None)
)");
    expect_error_at(read_repro(path), "repro.py", 5, "an AOTInductor repro: its graph is the exported program");
    write(path, R"(import torch
class Repro(torch.nn.Module):
    def forward(self, a):
        _linalg_svd = torch.ops.aten._linalg_svd.default(a, True);  a = None
        getitem = _linalg_svd[0]
        neg = torch.ops.aten.neg.default(getitem);  getitem = None
        return (neg,)

def load_args(reader):
    buf0 = reader.storage(None, 64)
    reader.tensor(buf0, (4, 4), is_leaf=True)  # a
)");
    Expected<Repro> svd = read_repro(path);
    QVERIFY2(svd.ok(), svd.status().to_string().c_str());  // it reads; only the oracle could replay it
    Expected<Candidate> c = candidate_of(*svd, false);
    QVERIFY(!c.ok());
    QCOMPARE(c.status().where().line, 5);
    QVERIFY2(c.status().message().find("node 'getitem' reads an item of '_linalg_svd' (aten::_linalg_svd.default), whose "
                                       "result is not known") != std::string::npos,
             c.status().to_string().c_str());
  }

  void malformed_pytorch_files_name_file_and_line() {
    QTemporaryDir tmp;
    std::string path = tmp.filePath("repro.py").toStdString();
    const std::string head = R"(import torch
class Repro(torch.nn.Module):
    def forward(self, a, b):
        add = torch.ops.aten.add.Tensor(a, b);  a = b = None
        return (add,)

def load_args(reader):
)";
    write(path, head + "    buf0 = reader.storage(None, 16)\n    reader.tensor(buf0, (4,))  # a\n    frobnicate(buf0)\n");
    expect_error_at(read_repro(path), "repro.py", 10, "cannot read this load_args line");

    write(path, head + "    buf0 = reader.storage(None, 16)\n    reader.tensor(buf0, (4,))  # a\n");
    expect_error_at(read_repro(path), "repro.py", 7, "forward() takes 2 inputs but load_args describes 1");

    write(path, head + "    buf0 = reader.storage(None, 16)\n    reader.tensor(buf0, (8,))  # a\n    reader.tensor(buf0, (4,))  # b\n");
    expect_error_at(read_repro(path), "repro.py", 9, "reaches element 7");

    // Two symints, two symbols and no annotation saying which is which: refused, both named.
    const std::string three = R"(import torch
class Repro(torch.nn.Module):
    def forward(self, a, b, c):
        add = torch.ops.aten.add.Tensor(a, b);  a = b = None
        return (add,)

def load_args(reader):
)";
    write(path, three + "    buf0 = reader.storage(None, 4*s0*s1)\n    reader.tensor(buf0, (s0, s1))  # a\n    reader.symint(4)  # b\n    reader.symint(2)  # c\n");
    expect_error_at(read_repro(path), "repro.py", 9, "the symbol s0 has no value: load_args names its reader.symint inputs by placeholder (b = 4, c = 2)");

    write(path, "import torch\nclass Repro(torch.nn.Module):\n    def forward(self, a):\n        add = torch.ops.aten.add.Tensor(a, \n");
    expect_error_at(read_repro(path), "repro.py", 0, "");

    // A graph text file whose placeholder has no annotation.
    std::string text = tmp.filePath("g.txt").toStdString();
    write(text, "class GraphModule(torch.nn.Module):\n    def forward(self, x):\n        sin = torch.ops.aten.sin.default(x)\n        return (sin,)\n");
    expect_error_at(read_repro(text), "g.txt", 2, "placeholder 'x' has no tensor annotation");
  }
};

QTEST_GUILESS_MAIN(TestRepro)
#include "test_repro.moc"
