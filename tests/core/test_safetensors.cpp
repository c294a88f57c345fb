#include "test_support.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

#include <cstring>
#include <fstream>
#include <limits>

#include "core/io/safetensors.h"

using namespace kiln;
using kiln::test::values;

namespace {

std::vector<std::byte> to_bytes(std::string_view s) {
  auto* p = reinterpret_cast<const std::byte*>(s.data());
  return std::vector<std::byte>(p, p + s.size());
}

// A file with the given header length field, header text and data buffer.
std::vector<std::byte> file_bytes(uint64_t length_field, std::string_view header,
                                  size_t data_bytes) {
  std::vector<std::byte> out(8);
  std::memcpy(out.data(), &length_field, 8);
  auto h = to_bytes(header);
  out.insert(out.end(), h.begin(), h.end());
  out.resize(out.size() + data_bytes, std::byte{0});
  return out;
}
std::vector<std::byte> file_bytes(std::string_view header, size_t data_bytes) {
  return file_bytes(header.size(), header, data_bytes);
}

void write_file(const std::string& path, const std::vector<std::byte>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return to_bytes(s);
}

bool exists(const std::string& path) { return QFileInfo::exists(QString::fromStdString(path)); }

// The bytes of a tensor's elements in row-major order.
std::vector<std::byte> raw(const Tensor& t) {
  Tensor c = t.contiguous();
  auto* p = static_cast<const std::byte*>(c.numel() ? c.raw_data() : nullptr);
  return std::vector<std::byte>(p, p + size_t(c.numel()) * c.itemsize());
}

// Distinct, non-trivial values in every dtype (negatives, fractions, wraps).
Tensor sample(DType dtype, Shape sizes) {
  std::vector<double> v(size_t(shape_numel(sizes)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = (double(i) - 2.5) * 1.75;
  return Tensor::from_vector(v, std::move(sizes)).to(dtype);
}

}  // namespace

class TestSafetensors : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

  std::string path(const char* name) { return dir_.filePath(name).toStdString(); }

  SafetensorsFile round_trip(const NamedTensors& tensors,
                             const std::map<std::string, std::string>& metadata = {}) {
    std::string p = path("round_trip.safetensors");
    Status s = write_safetensors(p, tensors, metadata);
    if (!s) qFatal("write failed: %s", s.to_string().c_str());
    auto r = read_safetensors(p);
    if (!r) qFatal("read failed: %s", r.status().to_string().c_str());
    return std::move(r).value();
  }

  // Both readers must reject `bytes` with `phrase`, naming the file.
  void expect_damage(const std::vector<std::byte>& bytes, const std::string& phrase) {
    std::string p = path("damaged.safetensors");
    write_file(p, bytes);
    auto r = read_safetensors(p);
    QVERIFY2(!r, qPrintable(QString::fromStdString("accepted; expected: " + phrase)));
    std::string msg = r.status().to_string();
    QVERIFY2(msg.find(phrase) != std::string::npos, qPrintable(QString::fromStdString(msg)));
    QVERIFY2(msg.find(p) != std::string::npos, qPrintable(QString::fromStdString(msg)));
    QCOMPARE(r.status().where().file, p);

    auto m = parse_safetensors(bytes, "in-memory.safetensors");
    QVERIFY(!m);
    QCOMPARE(m.status().message(), r.status().message());
    QCOMPARE(m.status().to_string(), "in-memory.safetensors: " + r.status().message());
  }

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void round_trip_every_dtype() {
    const DType all[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                         DType::Int64,   DType::Int32,   DType::Int16,   DType::Int8,
                         DType::UInt8,   DType::Bool};
    NamedTensors in;
    for (DType d : all) {
      std::string n(dtype_name(d));
      in.emplace_back(n, sample(d, {2, 3}));
      in.emplace_back(n + ".scalar", sample(d, {}));
      in.emplace_back(n + ".empty", sample(d, {0, 3}));
      in.emplace_back(n + ".permuted", sample(d, {3, 4, 2}).permute(std::vector<int64_t>{2, 0, 1}));
      in.emplace_back(n + ".strided", sample(d, {5, 6}).slice(1, 1, 6, 2).slice(0, 1, 4));
    }
    QVERIFY(!in[3].second.is_contiguous() && !in[4].second.is_contiguous());
    SafetensorsFile out = round_trip(in);
    QCOMPARE(out.tensors.size(), in.size());
    QVERIFY(out.metadata.empty());
    for (const auto& [name, want] : in) {
      const Tensor* got = out.find(name);
      QVERIFY2(got, name.c_str());
      QCOMPARE(got->dtype(), want.dtype());
      QCOMPARE(got->sizes(), want.sizes());
      QVERIFY(got->is_contiguous());
      QVERIFY2(raw(*got) == raw(want), name.c_str());
    }
    // Spot-check real values, not only bytes that made it back.
    KILN_COMPARE_VALUES(*out.find("bfloat16.scalar"), {-4.375});
    KILN_COMPARE_VALUES(*out.find("float16"), {-4.375, -2.625, -0.875, 0.875, 2.625, 4.375});
    KILN_COMPARE_VALUES(*out.find("int8.strided"), {7, 11, 14, 18, 21, 25, 28, 32, 35});
    KILN_COMPARE_VALUES(*out.find("bool"), {1, 1, 1, 1, 1, 1});
    QVERIFY(out.find("no such tensor") == nullptr);
  }

  // Like the reference: by descending alignment, then by name; data follows that order.
  void file_order_is_alignment_then_name() {
    NamedTensors in = {{"b", sample(DType::Bool, {3})},     {"z", sample(DType::Float32, {1})},
                       {"a", sample(DType::Float32, {2})},  {"h", sample(DType::Float16, {1})},
                       {"i", sample(DType::Int64, {1})},    {"d", sample(DType::Float64, {1})}};
    SafetensorsFile out = round_trip(in);
    std::vector<std::string> names;
    for (const auto& [n, t] : out.tensors) names.push_back(n);
    QCOMPARE(names, (std::vector<std::string>{"i", "d", "a", "z", "h", "b"}));
  }

  // The byte strings the reference implementation's own tests expect.
  void byte_identical_to_reference_writer() {
    auto one = serialize_safetensors({{"attn.0", kiln::test::arange_f32({1, 2, 3})}});
    QVERIFY(one);
    std::string header = R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})";
    std::vector<std::byte> want = file_bytes(header, 0);
    for (float f : {0.f, 1.f, 2.f, 3.f, 4.f, 5.f}) {
      auto* p = reinterpret_cast<const std::byte*>(&f);
      want.insert(want.end(), p, p + 4);
    }
    QCOMPARE(*one, want);

    auto empty = serialize_safetensors({});
    QVERIFY(empty);
    QCOMPARE(*empty, file_bytes("{}      ", 0));
    auto meta = serialize_safetensors({}, {{"framework", "pt"}});
    QVERIFY(meta);
    QCOMPARE(*meta, file_bytes(R"({"__metadata__":{"framework":"pt"}}     )", 0));

    // The header is padded so the data starts 8-byte aligned.
    auto odd = serialize_safetensors({{"attn0", kiln::test::arange_f32({1, 1, 2, 3})}});
    QVERIFY(odd);
    uint64_t n = 0;
    std::memcpy(&n, odd->data(), 8);
    QCOMPARE(n, uint64_t(72));
    QCOMPARE(char((*odd)[8 + 71]), ' ');
  }

  void metadata_round_trip() {
    std::map<std::string, std::string> meta = {
        {"format", "pt"}, {"note", "quotes \" and \\ and\nnewlines, ünïcode"}, {"empty", ""}};
    SafetensorsFile out = round_trip({{"x", sample(DType::Float32, {2})}}, meta);
    QCOMPARE(out.metadata, meta);
    QCOMPARE(out.tensors.size(), size_t(1));
    // No metadata at all also round-trips (and writes no "__metadata__").
    auto bytes = serialize_safetensors({{"x", sample(DType::Float32, {2})}});
    QVERIFY(bytes);
    std::string text(reinterpret_cast<const char*>(bytes->data()), bytes->size());
    QVERIFY(text.find("__metadata__") == std::string::npos);
  }

  void unusual_names_round_trip() {
    NamedTensors in = {{"", sample(DType::Int32, {1})},
                       {"a\"b\\c\n\x01", sample(DType::Int32, {2})},
                       {"wörter.ß", sample(DType::Int32, {3})}};
    SafetensorsFile out = round_trip(in);
    for (const auto& [name, t] : in) {
      QVERIFY(out.find(name));
      QCOMPARE(out.find(name)->sizes(), t.sizes());
    }
  }

  void reads_reference_corpus() {
    std::string file = kiln::test::reference_dir() + "/opcorpus/ops.safetensors";
    auto r = read_safetensors(file);
    QVERIFY2(r, r.status().to_string().c_str());

    // Count the header's entries independently of our reader.
    std::vector<std::byte> bytes = read_file(file);
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    QJsonObject header = QJsonDocument::fromJson(
        QByteArray(reinterpret_cast<const char*>(bytes.data()) + 8, qsizetype(n))).object();
    QVERIFY(!header.isEmpty());
    QCOMPARE(qsizetype(r->tensors.size()), header.size() - header.contains("__metadata__"));

    const Tensor* a = r->find("c000.arg0");
    QVERIFY(a);
    QCOMPARE(a->dtype(), DType::Float32);
    QCOMPARE(a->sizes(), (Shape{3, 4, 5}));
    QCOMPARE(a->data<float>()[0], 1.8054277896881104f);
    const Tensor* i = r->find("c131.out0");
    QVERIFY(i);
    QCOMPARE(i->dtype(), DType::Int64);
    QCOMPARE(i->dim(), int64_t(0));
    QCOMPARE(i->item().to_int(), int64_t(301));
    const Tensor* neg = r->find("c130.arg0");
    QVERIFY(neg);
    QCOMPARE(neg->data<int64_t>()[0], int64_t(-2));
    const Tensor* b = r->find("c038.arg0");
    QVERIFY(b);
    QCOMPARE(b->dtype(), DType::Bool);
    QCOMPARE(b->sizes(), (Shape{3, 4, 5}));
    KILN_COMPARE_VALUES(b->flatten().slice(0, 0, 4), {1, 0, 1, 1});
    QCOMPARE(r->find("c128.arg0")->dtype(), DType::Float16);
    // File order is data-offset order.
    QCOMPARE(r->tensors.front().first, std::string("c000.arg0"));

    // The in-memory reader agrees.
    auto m = parse_safetensors(bytes, file);
    QVERIFY(m);
    QCOMPARE(m->tensors.size(), r->tensors.size());
    for (size_t k = 0; k < m->tensors.size(); ++k) {
      QCOMPARE(m->tensors[k].first, r->tensors[k].first);
      QVERIFY(raw(m->tensors[k].second) == raw(r->tensors[k].second));
    }
  }

  void bool_bytes_other_than_one_read_as_true() {
    auto bytes = file_bytes(R"({"b":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}}     )", 3);
    bytes[bytes.size() - 3] = std::byte{2};
    bytes[bytes.size() - 1] = std::byte{255};
    auto r = parse_safetensors(bytes, "mem");
    QVERIFY(r);
    const bool* p = r->find("b")->data<bool>();
    QCOMPARE(reinterpret_cast<const unsigned char*>(p)[0], (unsigned char)1);
    QCOMPARE(reinterpret_cast<const unsigned char*>(p)[1], (unsigned char)0);
    QCOMPARE(reinterpret_cast<const unsigned char*>(p)[2], (unsigned char)1);
  }

  void zero_size_tensors_and_no_tensors() {
    // Zero-byte entries may sit at the same offset; unknown entry keys are ignored.
    auto r = parse_safetensors(
        file_bytes(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},)"
                   R"("b":{"dtype":"I8","shape":[2,0,5],"data_offsets":[0,0],"extra":1},)"
                   R"("c":{"dtype":"I8","shape":[],"data_offsets":[0,1]}})",
                   1),
        "mem");
    QVERIFY2(r, r.status().to_string().c_str());
    QCOMPARE(r->find("b")->sizes(), (Shape{2, 0, 5}));
    QCOMPARE(r->find("c")->dim(), int64_t(0));
    auto none = parse_safetensors(file_bytes("{ }", 0), "mem");
    QVERIFY(none);
    QVERIFY(none->tensors.empty());
    auto null_meta = parse_safetensors(file_bytes(R"({"__metadata__":null})", 0), "mem");
    QVERIFY(null_meta);
  }

  // ---- damage: one case per kind, checking the key phrase and the file name ----

  void damage_file_too_short() {
    expect_damage({}, "file too short: 0 bytes");
    expect_damage(std::vector<std::byte>(5), "file too short: 5 bytes");
  }

  void damage_header_length() {
    expect_damage(file_bytes(100, "{}", 0), "header length field is larger than the file (2 bytes");
    expect_damage(file_bytes(uint64_t(1) << 40, "{}", 0), "header length field is over the limit");
    expect_damage(file_bytes(std::numeric_limits<uint64_t>::max(), "{}", 0), "header length field is over the limit");
    expect_damage(file_bytes(100'000'001, "{}", 0), "header length field is over the limit");
  }

  void damage_not_json() {
    expect_damage(file_bytes("{\"a\": ", 0), "header is not valid JSON");
    expect_damage(file_bytes("", 0), "header is not valid JSON");
    expect_damage(file_bytes(std::string("{}\0\0", 4), 0),
                  "header is not valid JSON: NUL byte at offset 2");
    expect_damage(file_bytes(std::string("{\"a\0b\":1}", 9), 0), "NUL byte at offset 3");
    expect_damage(file_bytes("{\"\xff\":{}}", 0), "header is not valid JSON");
    expect_damage(file_bytes("{} {}", 0), "header is not valid JSON: parse error at line 1, column 4");
    auto long_token = parse_safetensors(file_bytes("{\"" + std::string(100000, 'x'), 0), "mem");
    QVERIFY(!long_token);
    QVERIFY(long_token.status().message().size() < 400);
  }

  void damage_number_too_large() {
    // Found by fuzz_safetensors: JSON's number overflow is not a parse_error.
    expect_damage(file_bytes("[627900E47900E67]", 0), "header is not valid JSON");
    expect_damage(file_bytes(R"({"a":{"dtype":"F32","shape":[1E400],"data_offsets":[0,4]}})", 4),
                  "header is not valid JSON");
  }

  void damage_not_an_object() {
    expect_damage(file_bytes("[1, 2]", 0), "header is not a JSON object (got array)");
    expect_damage(file_bytes("\"x\"", 0), "header is not a JSON object (got string)");
    // Deep nesting must neither crash nor recurse off the stack.
    std::string deep = std::string(200000, '[') + std::string(200000, ']');
    expect_damage(file_bytes(deep, 0), "header is not a JSON object");
    expect_damage(file_bytes(R"({"a": 5})", 0), "entry 'a' is not an object (got number)");
    expect_damage(file_bytes(R"({"a": [{"dtype":"F32"}]})", 0), "entry 'a' is not an object");
  }

  void damage_missing_fields() {
    expect_damage(file_bytes(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", 4),
                  "entry 'a': missing \"dtype\"");
    expect_damage(file_bytes(R"({"a":{"dtype":"F32","data_offsets":[0,4]}})", 4),
                  "entry 'a': missing \"shape\"");
    expect_damage(file_bytes(R"({"a":{"dtype":"F32","shape":[1]}})", 4),
                  "entry 'a': missing \"data_offsets\"");
  }

  void damage_wrongly_typed_fields() {
    expect_damage(file_bytes(R"({"a":{"dtype":4,"shape":[1],"data_offsets":[0,4]}})", 4),
                  "entry 'a': \"dtype\" must be a string, got number");
    expect_damage(file_bytes(R"({"a":{"dtype":"F32","shape":4,"data_offsets":[0,4]}})", 4),
                  "entry 'a': \"shape\" must be a list of integers, got number");
    expect_damage(file_bytes(R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4),
                  "entry 'a': \"shape\" must be a list of non-negative integers, found a number");
    expect_damage(file_bytes(R"({"a":{"dtype":"F32","shape":["1"],"data_offsets":[0,4]}})", 4),
                  "found a string");
    for (const char* off : {"4", "[0]", "[0,4,8]", "[0,\"4\"]", "[-1,4]", "[0,4.0]", "{}"})
      expect_damage(file_bytes(std::string(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":)") +
                                   off + "}}",
                               4),
                    "entry 'a': \"data_offsets\" must be a list of two non-negative integers");
  }

  void damage_unknown_dtype() {
    expect_damage(file_bytes(R"({"a":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})", 1),
                  "entry 'a': unknown dtype 'F8_E4M3'");
    expect_damage(file_bytes(R"({"a":{"dtype":"f32","shape":[1],"data_offsets":[0,4]}})", 4),
                  "unknown dtype 'f32'");
  }

  void damage_negative_shape() {
    expect_damage(file_bytes(R"({"a":{"dtype":"F32","shape":[2,-2],"data_offsets":[0,0]}})", 0),
                  "entry 'a': negative size -2 in \"shape\"");
  }

  void damage_shape_overflow() {
    // 2^62 * 2^62 overflows; so does 2^62 * 4 bytes; so does 2^64 - 1 elements.
    expect_damage(
        file_bytes(R"({"a":{"dtype":"U8","shape":[4611686018427387904,4611686018427387904],)"
                   R"("data_offsets":[0,0]}})",
                   0),
        "entry 'a': shape [4611686018427387904, 4611686018427387904] is too large");
    expect_damage(
        file_bytes(R"({"a":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}})", 0),
        "is too large: its size in bytes overflows");
    expect_damage(
        file_bytes(R"({"a":{"dtype":"I8","shape":[18446744073709551615],"data_offsets":[0,0]}})", 0),
        "is too large");
    // A zero dim does not excuse the others: their strides would still overflow.
    expect_damage(
        file_bytes(R"({"a":{"dtype":"I8","shape":[0,4611686018427387904,4],"data_offsets":[0,0]}})",
                   0),
        "is too large");
  }

  void damage_offsets_begin_after_end() {
    expect_damage(file_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", 8),
                  "entry 'a': data_offsets [8, 4] begin after they end");
  }

  void damage_offsets_beyond_buffer() {
    expect_damage(file_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4),
                  "entry 'a': data_offsets [0, 8] end beyond the data buffer (4 bytes)");
    expect_damage(
        file_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,18446744073709551615]}})", 4),
        "end beyond the data buffer");
  }

  void damage_byte_length_mismatch() {
    expect_damage(file_bytes(R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", 12),
                  "entry 'a': data_offsets [0, 12] hold 12 bytes, but F32 with shape [2, 2] needs 16");
  }

  void damage_overlap() {
    expect_damage(file_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                             12),
                  "entry 'b': data_offsets [4, 12] overlap entry 'a' [0, 8]");
    // The same bytes claimed twice.
    expect_damage(file_bytes(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("y":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})",
                             8),
                  "entry 'y': data_offsets [0, 8] overlap entry 'x' [0, 8]");
  }

  void damage_holes_and_trailing_bytes() {
    expect_damage(file_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                             R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                             12),
                  "bytes [4, 8) of the data buffer belong to no tensor (a hole before entry 'b')");
    expect_damage(file_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
                  "bytes [0, 4) of the data buffer belong to no tensor");
    expect_damage(file_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 7),
                  "bytes [4, 7) of the data buffer belong to no tensor (3 bytes after the last tensor)");
    expect_damage(file_bytes("{}", 1), "bytes [0, 1) of the data buffer belong to no tensor");
  }

  void damage_duplicate_names() {
    expect_damage(file_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                             R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                             8),
                  "duplicate tensor name 'a'");
    expect_damage(file_bytes(R"({"a":{"dtype":"F32","dtype":"I32","shape":[1],"data_offsets":[0,4]}})", 4),
                  "entry 'a': duplicate key 'dtype'");
  }

  void damage_metadata() {
    expect_damage(file_bytes(R"({"__metadata__":[1]})", 0),
                  "\"__metadata__\" must be an object of strings, got array");
    expect_damage(file_bytes(R"({"__metadata__":{"k":1}})", 0),
                  "\"__metadata__\" value for 'k' must be a string, got number");
  }

  void damage_hostile_names_are_clipped() {
    std::string name(100000, 'n');
    auto r = parse_safetensors(file_bytes("{\"" + name + "\":5}", 0), "mem");
    QVERIFY(!r);
    QVERIFY(r.status().message().size() < 400);
    QVERIFY(r.status().message().find("...' is not an object") != std::string::npos);
  }

  void unreadable_files() {
    std::string missing = path("missing.safetensors");
    auto r = read_safetensors(missing);
    QVERIFY(!r);
    QVERIFY(r.status().to_string().starts_with(missing + ": cannot read file"));
    auto d = read_safetensors(dir_.path().toStdString());
    QVERIFY(!d);
    QVERIFY(d.status().message().starts_with("cannot read file"));
  }

  // ---- writing failures ----

  void failed_write_leaves_no_file() {
    std::string p = path("no/such/dir/out.safetensors");
    Status s = write_safetensors(p, {{"x", sample(DType::Float32, {2})}});
    QVERIFY(!s);
    QVERIFY2(s.message().starts_with("cannot create"), s.message().c_str());
    QVERIFY(s.to_string().starts_with(p + ": "));
    QVERIFY(!exists(p) && !exists(p + ".tmp"));
  }

  void bad_input_to_writer_leaves_old_file_intact() {
    std::string p = path("keep.safetensors");
    QVERIFY(write_safetensors(p, {{"old", sample(DType::Int32, {4})}}));
    std::vector<std::byte> before = read_file(p);

    struct Case {
      NamedTensors tensors;
      std::string phrase;
    };
    std::vector<Case> cases = {
        {{{"m", Tensor::meta({2}, DType::Float32)}}, "tensor 'm' has no data (a meta tensor)"},
        {{{"u", Tensor()}}, "tensor 'u' has no data (undefined)"},
        {{{"a", sample(DType::Int32, {1})}, {"a", sample(DType::Int8, {1})}},
         "duplicate tensor name 'a'"},
        {{{"__metadata__", sample(DType::Int32, {1})}}, "cannot be named \"__metadata__\""},
        {{{"bad\xff", sample(DType::Int32, {1})}}, "not valid UTF-8"},
    };
    for (const Case& c : cases) {
      Status s = write_safetensors(p, c.tensors);
      QVERIFY(!s);
      QVERIFY2(s.message().find(c.phrase) != std::string::npos, s.message().c_str());
      QCOMPARE(s.where().file, p);
      QVERIFY(read_file(p) == before);
      QVERIFY(!exists(p + ".tmp"));
    }
    Status s = write_safetensors(p, {{"x", sample(DType::Int32, {1})}}, {{"k", "\xc3"}});
    QVERIFY(!s);
    QVERIFY(s.message().find("not valid UTF-8") != std::string::npos);
    QVERIFY(read_file(p) == before);
  }

  void overwrite_replaces_file() {
    std::string p = path("over.safetensors");
    QVERIFY(write_safetensors(p, {{"first", sample(DType::Float32, {100})}}));
    QVERIFY(write_safetensors(p, {{"second", sample(DType::Int8, {3})}}));
    auto r = read_safetensors(p);
    QVERIFY(r);
    QCOMPARE(r->tensors.size(), size_t(1));
    QCOMPARE(r->tensors[0].first, std::string("second"));
    QVERIFY(!exists(p + ".tmp"));
  }
};

QTEST_GUILESS_MAIN(TestSafetensors)
#include "test_safetensors.moc"
