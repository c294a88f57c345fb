// PyTorch repro.py files written by write_torch_repro: Kiln's own Python
// parser accepts the whole file and reads back the same forward graph, the
// inputs beside it are the repro's bit for bit; and `kiln-cli repro run`
// replays Kiln repros with the verdicts and exit codes of docs/cli.md.
//
// KILN_KEEP_TORCH_REPROS=DIR keeps the repro.py files this test writes in DIR,
// to run them under real PyTorch (docs/repro_files.md says how).
#include <QtTest/QtTest>

#include <QTemporaryDir>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/graph/parser.h"
#include "core/graph/printer.h"
#include "core/io/safetensors.h"
#include "core/python/parser.h"
#include "minifier/repro.h"
#include "test_support.h"

using namespace kiln;
using namespace kiln::minify;
namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
}

// GraphModule.code's form under one class name: what "the same forward" means.
std::string code_form(Graph g) {
  g.class_name = "Repro";
  PrintOptions o;
  o.verbose = false;
  return print_graph_module(g, o);
}

void move_devices(Arg& a, const std::string& device) {
  if (a.kind == Arg::Kind::Device) a.s = device;
  for (Arg& item : a.items) move_devices(item, device);
}

// The graph a repro.py for `device` should hold: device arguments moved there.
Graph on_device(Graph g, const std::string& device) {
  for (Node& n : g.nodes) {
    for (Arg& a : n.args) move_devices(a, device);
    for (auto& kv : n.kwargs) move_devices(kv.second, device);
  }
  return g;
}

std::string keep_dir() { return qEnvironmentVariable("KILN_KEEP_TORCH_REPROS").toStdString(); }

// Writes the repro.py (into KILN_KEEP_TORCH_REPROS/<name>/ when set) and checks it.
std::string write_and_check(const Repro& r, const TorchReproOptions& o, const std::string& dir, const std::string& name) {
  std::string folder = (keep_dir().empty() ? dir : keep_dir()) + "/" + name;
  fs::create_directories(folder);
  std::string path = folder + "/repro.py";
  Status st = write_torch_repro(path, r, o);
  if (!st.ok()) qFatal("%s", st.to_string().c_str());
  std::string text = slurp(path);
  // The whole file is Python Kiln's parser accepts (so: valid Python 3 syntax).
  auto module = py::parse_module(text, path);
  if (!module) qFatal("%s", module.status().to_string().c_str());
  // Its Repro class is the graph.
  Expected<Graph> back = parse_graph_module(text, path);
  if (!back) qFatal("%s", back.status().to_string().c_str());
  std::string want = code_form(on_device(r.graph, o.device));
  if (code_form(*back) != want)
    qFatal("%s: forward differs:\n%s\nvs\n%s", name.c_str(), code_form(*back).c_str(), want.c_str());
  // The inputs beside it, by placeholder name, bit for bit.
  Expected<SafetensorsFile> inputs = read_safetensors(folder + "/repro.safetensors");
  if (!inputs) qFatal("%s", inputs.status().to_string().c_str());
  size_t k = 0;
  for (const Node& n : r.graph.nodes) {
    if (n.op != OpKind::Placeholder) continue;
    const Tensor* t = inputs->find(n.name);
    if (!t) qFatal("no tensor %s", n.name.c_str());
    Tensor want = r.inputs[k++].contiguous();
    if (t->dtype() != want.dtype() || t->sizes() != want.sizes() ||
        std::memcmp(t->raw_data(), want.raw_data(), size_t(want.numel()) * want.itemsize()) != 0)
      qFatal("input %s differs", n.name.c_str());
  }
  return text;
}

Repro read_or_die(const std::string& path) {
  Expected<Repro> r = read_repro(path);
  if (!r) qFatal("%s", r.status().to_string().c_str());
  return std::move(*r);
}

QProcessEnvironment env_with(const QString& key, const QString& value) {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.remove("KILN_INJECT_BUG");
  if (!key.isEmpty()) env.insert(key, value);
  return env;
}

}  // namespace

class TestReproTorch : public QObject {
  Q_OBJECT
 private slots:
  void reference_files_become_runnable_repros() {
    QTemporaryDir tmp;
    const std::string ref = test::reference_dir() + "/minifier";
    struct Case {
      const char* file;
      const char* name;
      const char* check;
      const char* device;
    };
    for (Case c : {Case{"accuracy_cuda/repro.py", "relu_accuracy", "accuracy", "cuda"},
                   Case{"accuracy_cpu/minifier_launcher.py", "launcher_accuracy", "accuracy", "cpu"},
                   Case{"compile_error_cpu/minifier_launcher.py", "launcher_compile_error", "compile-error", "cpu"},
                   Case{"accuracy_cpu/repro.py", "cpu_repro", "crash", "cpu"}}) {
      Repro r = read_or_die(ref + "/" + c.file);
      TorchReproOptions o;
      o.check = c.check;
      o.device = c.device;
      std::string text = write_and_check(r, o, tmp.path().toStdString(), c.name);
      QVERIFY(text.find("class Repro(torch.nn.Module):\n    def forward(self, ") != std::string::npos);
      QVERIFY(text.find("torch.ops.aten.") != std::string::npos);
      QVERIFY(text.find("CHECK = '" + std::string(c.check) + "'\n") != std::string::npos);
      QVERIFY(text.find("DEVICE = '" + std::string(c.device) + "'\n") != std::string::npos);
      QVERIFY(text.find("TOLERANCE = 0.001\n") != std::string::npos);
      QVERIFY(text.find("BACKEND = 'inductor'\n") != std::string::npos);
      QVERIFY(text.find("KILN_REPRO_INJECT") != std::string::npos);
      QVERIFY(text.find("From: " + ref + "/" + c.file) != std::string::npos);
      // The inputs' layout and dtype, for regenerating them without the file.
      QVERIFY(text.find("(" + std::to_string(r.inputs[0].size(0)) + ", ") != std::string::npos);
    }
  }

  void options_reach_the_script() {
    QTemporaryDir tmp;
    std::string graph = tmp.filePath("g.txt").toStdString();
    // A factory op with a device argument, a strided input and an int one.
    write(graph, R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4, 3][1, 4]cpu", n: "i64[4][1]cpu"):
        full = torch.ops.aten.full.default([4, 3], 1.0, dtype = torch.float32, layout = torch.strided, device = device(type='cpu'), pin_memory = False)
        add = torch.ops.aten.add.Tensor(x, full);  x = full = None
        relu = torch.ops.aten.relu.default(add);  add = None
        return (relu, n)
)");
    Repro r = read_or_die(graph);
    TorchReproOptions o;
    o.device = "cuda";
    o.tolerance = 0.05;
    o.check_non_float = true;
    o.backend = "aot_eager";
    std::string text = write_and_check(r, o, tmp.path().toStdString(), "options");
    QVERIFY(text.find("device = device(type='cuda')") != std::string::npos);
    QVERIFY(text.find("device(type='cpu')") == std::string::npos);
    QVERIFY(text.find("DEVICE = 'cuda'\n") != std::string::npos);
    QVERIFY(text.find("TOLERANCE = 0.05\n") != std::string::npos);
    QVERIFY(text.find("CHECK_NON_FLOAT = True\n") != std::string::npos);
    QVERIFY(text.find("BACKEND = 'aot_eager'\n") != std::string::npos);
    QVERIFY(text.find("('x', (4, 3), (1, 4), torch.float32),") != std::string::npos);
    QVERIFY(text.find("('n', (4,), (1,), torch.int64),") != std::string::npos);
    QVERIFY(text.find("SEED = 0\n") != std::string::npos);
    QVERIFY(text.find("RECORDED_INPUTS = 0 ") != std::string::npos);
    // Inputs without an origin (a minified candidate's) count as recorded.
    r.input_origins.clear();
    text = write_and_check(r, o, tmp.path().toStdString(), "options");
    QVERIFY(text.find("RECORDED_INPUTS = 2 ") != std::string::npos);
    QVERIFY(text.find("(2 recorded, 0 drawn") != std::string::npos);
  }

  void what_a_repro_py_cannot_hold_is_refused() {
    QTemporaryDir tmp;
    std::string path = tmp.filePath("repro.py").toStdString();
    Repro r = read_or_die(test::reference_dir() + "/minifier/accuracy_cuda/repro.py");
    TorchReproOptions o;
    o.check = "flaky";
    Status st = write_torch_repro(path, r, o);
    QVERIFY(!st.ok());
    QVERIFY2(st.message().find("unknown check 'flaky'") != std::string::npos, st.message().c_str());
    QCOMPARE(st.where().file, path);
    QVERIFY(!fs::exists(path));

    Repro attr = r;
    Node get;
    get.op = OpKind::GetAttr;
    get.name = "_tensor_constant0";
    get.target = "_tensor_constant0";
    attr.graph.nodes.insert(attr.graph.nodes.begin() + 1, get);
    st = write_torch_repro(path, attr, {});
    QVERIFY(!st.ok());
    QVERIFY2(st.message().find("_tensor_constant0") != std::string::npos, st.message().c_str());

    Repro missing = r;
    missing.inputs.clear();
    QVERIFY(!write_torch_repro(path, missing, {}).ok());
    QVERIFY(!fs::exists(path));
  }

  void repro_run_replays_with_the_stored_predicate() {
    QTemporaryDir tmp;
    Repro r = read_or_die(test::reference_dir() + "/minifier/accuracy_cuda/repro.py");
    r.predicate_json = R"({"check": "accuracy", "tolerance": 0.001})";
    QString dir = tmp.filePath("relu");
    QVERIFY(write_kiln_repro(dir.toStdString(), r).ok());

    test::CliRun clean = test::run_cli({"repro", "run", dir}, 120000, env_with("", ""));
    QCOMPARE(clean.code, 0);
    QVERIFY2(clean.out.contains("no longer fails"), clean.out.constData());
    QVERIFY2(clean.out.contains("check: accuracy (tolerance 0.001)"), clean.out.constData());
    QVERIFY2(clean.out.contains("inputs: 1 random (seed 0)"), clean.out.constData());

    test::CliRun bug = test::run_cli({"repro", "run", dir}, 120000, env_with("KILN_INJECT_BUG", "relu:accuracy"));
    QCOMPARE(bug.code, 1);
    QVERIFY2(bug.out.contains("still fails: accuracy: output 0 (relu)"), bug.out.constData());

    test::CliRun js = test::run_cli({"repro", "run", dir, "--json"}, 120000, env_with("KILN_INJECT_BUG", "relu:accuracy"));
    QCOMPARE(js.code, 1);
    nlohmann::json j = nlohmann::json::parse(js.out.toStdString());
    QCOMPARE(j["verdict"].get<std::string>(), std::string("still fails"));
    QCOMPARE(j["check"].get<std::string>(), std::string("accuracy"));
    QCOMPARE(j["ops"].get<int>(), 1);
    QCOMPARE(j["inputs"][0]["name"].get<std::string>(), std::string("addmm_1"));
    QCOMPARE(j["inputs"][0]["origin"].get<std::string>(), std::string("random (seed 0)"));

    // --check overrides the stored predicate; a crash is contained and reported.
    test::CliRun crash = test::run_cli({"repro", "run", dir, "--check", "crash"}, 120000, env_with("KILN_INJECT_BUG", "relu:crash"));
    QCOMPARE(crash.code, 1);
    QVERIFY2(crash.out.contains("still fails: crash: killed by SIG"), crash.out.constData());

    // A failure with another signature than the recorded one.
    r.predicate_json = R"({"check": "compile-error", "signature": "compile-error at passes: something else"})";
    QString other = tmp.filePath("other");
    QVERIFY(write_kiln_repro(other.toStdString(), r).ok());
    test::CliRun drift = test::run_cli({"repro", "run", other}, 120000, env_with("KILN_INJECT_BUG", "relu:compile-error"));
    QCOMPARE(drift.code, 1);
    QVERIFY2(drift.out.contains("fails differently: compile-error"), drift.out.constData());
    QVERIFY2(drift.out.contains("recorded failure: compile-error at passes: something else"), drift.out.constData());
  }

  void repro_run_exit_codes_for_bad_input_and_usage() {
    QTemporaryDir tmp;
    Repro r = read_or_die(test::reference_dir() + "/minifier/accuracy_cuda/repro.py");
    QString dir = tmp.filePath("nopredicate");
    QVERIFY(write_kiln_repro(dir.toStdString(), r).ok());
    // No predicate.json and no --check (as every PyTorch repro.py): the
    // accuracy check, which finds exceptions and wrong numbers, and says it chose it.
    test::CliRun chosen = test::run_cli({"repro", "run", dir}, 120000, env_with("", ""));
    QCOMPARE(chosen.code, 0);
    QVERIFY2(chosen.out.contains("check: accuracy (tolerance 0.001) (the file names no check; --check chooses another)"),
             chosen.out.constData());
    test::CliRun with_check = test::run_cli({"repro", "run", dir, "--check", "compile-error"}, 120000, env_with("", ""));
    QCOMPARE(with_check.code, 0);
    // The oracle on repro run: without a command it says how to give one; with one it runs it.
    test::CliRun no_oracle = test::run_cli({"repro", "run", dir, "--check", "oracle"}, 120000, env_with("", ""));
    QCOMPARE(no_oracle.code, 2);
    QVERIFY2(no_oracle.err.contains("--oracle CMD with {repro}"), no_oracle.err.constData());
    test::CliRun oracle = test::run_cli({"repro", "run", dir, "--check", "oracle", "--oracle", "! grep -q 'aten.relu' {repro}"}, 120000,
                                        env_with("", ""));
    QCOMPARE(oracle.code, 1);  // relu is in the graph: the command fails, which is the failure
    QVERIFY2(oracle.out.contains("still fails: oracle"), oracle.out.constData());
    // repro run and minify take the same oracle options and refuse the same misuses.
    for (QStringList command : {QStringList{"repro", "run", dir}, QStringList{"minify", dir, "--out", tmp.filePath("out")}}) {
      test::CliRun both = test::run_cli(command + QStringList{"--check", "oracle", "--oracle", "python3 {repro}", "--oracle-python", "python3"},
                                        120000, env_with("", ""));
      QCOMPARE(both.code, 2);
      QVERIFY2(both.err.contains("two ways to run the oracle: give one"), both.err.constData());
      test::CliRun wrong = test::run_cli(command + QStringList{"--check", "accuracy", "--oracle-python", "python3"}, 120000,
                                         env_with("", ""));
      QCOMPARE(wrong.code, 2);
      QVERIFY2(wrong.err.contains("go with --check oracle"), wrong.err.constData());
    }

    std::string graph = dir.toStdString() + "/graph.txt";
    std::string text = slurp(graph);
    write(graph, text.substr(0, text.find("relu.default(") + 14));
    test::CliRun bad = test::run_cli({"repro", "run", dir, "--check", "accuracy"}, 120000, env_with("", ""));
    QCOMPARE(bad.code, 3);
    QVERIFY2(bad.err.contains("graph.txt:"), bad.err.constData());

    test::CliRun missing = test::run_cli({"repro", "run", tmp.filePath("nothing"), "--check", "accuracy"}, 120000, env_with("", ""));
    QCOMPARE(missing.code, 3);
    QVERIFY2(missing.err.contains("nothing"), missing.err.constData());
  }
};

QTEST_GUILESS_MAIN(TestReproTorch)
#include "test_repro_torch.moc"
