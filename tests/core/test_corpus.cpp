// Loading the op corpus, the comparison rule, and damaged corpus files.
#include "test_support.h"

#include <QTemporaryDir>

#include <filesystem>
#include <fstream>

#include "core/corpus/conformance.h"

using namespace kiln;

namespace {
std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void spit(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}
}  // namespace

class TestCorpus : public QObject {
  Q_OBJECT
 private:
  std::string corpus_dir_;
  // A copy of the reference corpus whose ops.json is replaced by `json`.
  std::string damaged_corpus(QTemporaryDir& tmp, const std::string& json) {
    std::string dir = tmp.path().toStdString();
    std::filesystem::copy_file(corpus_dir_ + "/ops.safetensors", dir + "/ops.safetensors");
    spit(dir + "/ops.json", json);
    return dir;
  }
  void expect_error(const std::string& json, const QString& phrase, int line = -1) {
    QTemporaryDir tmp;
    std::string dir = damaged_corpus(tmp, json);
    auto c = load_corpus(dir);
    QVERIFY(!c.ok());
    QString msg = QString::fromStdString(c.status().to_string());
    QVERIFY2(msg.contains(phrase), qPrintable(msg));
    QVERIFY2(msg.contains("ops.json"), qPrintable(msg));
    if (line >= 0) QCOMPARE(c.status().where().line, line);
  }

 private slots:
  void initTestCase() { corpus_dir_ = kiln::test::reference_dir() + "/opcorpus"; }

  void loads_reference_corpus() {
    auto c = load_corpus(corpus_dir_);
    QVERIFY2(c.ok(), c.status().to_string().c_str());
    QVERIFY(c->cases.size() >= 100);
    QVERIFY(QString::fromStdString(c->torch_version).startsWith("2."));
    const CorpusCase& first = c->cases.front();
    QCOMPARE(first.op, std::string("aten::abs.default"));
    QCOMPARE(first.outputs.size(), size_t(1));
    QCOMPARE(first.args.at(0).to_tensor().sizes(), first.outputs[0].sizes());
    QCOMPARE(first.line, 5);  // the line of its "id"
    for (const CorpusCase& k : c->cases)  // every case names its op and expected outputs
      QVERIFY(!k.op.empty() && !k.outputs.empty());
  }

  void comparison_rule() {
    Tensor a = Tensor::from_vector<float>({1.f, 2.f, NAN, INFINITY}, {4});
    QVERIFY(compare_tensors(a, a).ok);
    Tensor b = Tensor::from_vector<float>({1.f, 2.000002f, NAN, INFINITY}, {4});
    QVERIFY(compare_tensors(b, a).ok);  // within rtol 1.3e-6 + atol 1e-5
    Tensor c = Tensor::from_vector<float>({1.f, 2.1f, NAN, INFINITY}, {4});
    Comparison bad = compare_tensors(c, a);
    QVERIFY(!bad.ok);
    QVERIFY(bad.reason.find("first at flat index 1") != std::string::npos);
    Tensor d = Tensor::from_vector<float>({1.f, 2.f, 0.f, INFINITY}, {4});
    QVERIFY(!compare_tensors(d, a).ok);  // NaN must stay NaN
    QVERIFY(!compare_tensors(a.to(DType::Float64), a).ok);  // dtype must match
    QVERIFY(!compare_tensors(a.view({2, 2}), a).ok);        // shape must match
    Tensor i = Tensor::from_vector<int64_t>({1, 2}, {2}), j = Tensor::from_vector<int64_t>({1, 3}, {2});
    QVERIFY(!compare_tensors(i, j).ok);  // integers compare exactly
  }

  void missing_folder_names_it() {
    auto c = load_corpus("/nonexistent/corpus");
    QVERIFY(!c.ok());
    QVERIFY(c.status().to_string().find("/nonexistent/corpus") != std::string::npos);
  }

  void bad_json_names_line() {
    expect_error("{\n \"cases\": [\n  {\"id\": \"x\",,}\n ]\n}\n", "invalid JSON", 3);
  }
  void not_an_object() { expect_error("[1, 2]\n", "\"cases\" array", 1); }
  void unknown_argument_kind() {
    expect_error(R"({"cases": [{"id": "c0", "op": "aten::abs.default", "args": [{"complex": 1}], "outputs": []}]})",
                 "unknown argument kind 'complex'");
  }
  void tensor_not_in_file() {
    expect_error(R"({"cases": [{"id": "c0", "op": "aten::abs.default", "args": [{"tensor": "nope"}], "outputs": []}]})",
                 "tensor 'nope' is not in");
  }
  void case_without_op() {
    expect_error(R"({"cases": [{"id": "c7", "args": [], "outputs": []}]})", "case c7: missing \"op\"");
  }
  void damaged_safetensors() {
    QTemporaryDir tmp;
    std::string dir = tmp.path().toStdString();
    spit(dir + "/ops.json", slurp(corpus_dir_ + "/ops.json"));
    std::string bytes = slurp(corpus_dir_ + "/ops.safetensors");
    spit(dir + "/ops.safetensors", bytes.substr(0, bytes.size() / 2));  // truncated
    auto c = load_corpus(dir);
    QVERIFY(!c.ok());
    QVERIFY2(c.status().to_string().find("ops.safetensors") != std::string::npos,
             c.status().to_string().c_str());
  }
};

QTEST_APPLESS_MAIN(TestCorpus)
#include "test_corpus.moc"
