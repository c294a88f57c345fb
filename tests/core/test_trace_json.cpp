// The envelope scanner: what it accepts (JSON plus Python's NaN/Infinity),
// what it decodes, and where it reports errors.
#include "test_support.h"

#include "core/trace/json_scan.h"

using namespace kiln::trace;

namespace {
QString q(const std::string& s) { return QString::fromStdString(s); }

json::ParseError fails(std::string_view text) {
  json::Value v;
  json::ParseError err;
  if (json::parse(text, v, err)) qFatal("'%.*s' parsed", int(text.size()), text.data());
  return err;
}
}  // namespace

class TestTraceJson : public QObject {
  Q_OBJECT
 private slots:
  void envelope_members() {
    std::vector<json::Member> ms;
    json::ParseError err;
    QVERIFY(json::parse_object(" {\"artifact\": {\"name\": \"x\", \"encoding\": \"string\"}, \"frame_id\": 3, \"attempt\": 0, \"rank\": null} ", ms, err));
    QCOMPARE(ms.size(), size_t(4));
    QCOMPARE(q(std::string(ms[0].key)), QString("artifact"));
    QVERIFY(ms[0].value.is_object());
    QCOMPARE(q(json::to_string(*json::find(ms[0].value, "name"))), QString("x"));
    int64_t n = 0;
    QVERIFY(json::to_int(*json::find(ms, "frame_id"), n));
    QCOMPARE(n, int64_t(3));
    QVERIFY(json::find(ms, "rank")->is_null());
    QVERIFY(!json::find(ms, "nope"));
  }

  void strings_decode() {
    json::Value v;
    json::ParseError err;
    QVERIFY(json::parse("\"a\\\"b\\\\c\\/d\\n\\t\\u00e9\\ud83d\\ude00\"", v, err));
    QCOMPARE(q(json::to_string(v)), QString::fromUtf8("a\"b\\c/d\n\t\xc3\xa9\xf0\x9f\x98\x80"));
    QVERIFY(!json::plain_string(v));
    QVERIFY(json::parse("\"plain\"", v, err));
    QCOMPARE(q(std::string(*json::plain_string(v))), QString("plain"));
    QVERIFY(json::key_is("na\\u006de", "name"));
  }

  void numbers() {
    json::Value v;
    json::ParseError err;
    double d = 0;
    int64_t i = 0;
    for (const char* ok : {"0", "-1", "1.5", "1e10", "-2.5E-3", "NaN", "Infinity", "-Infinity", "1795307149402861.0"})
      QVERIFY2(json::parse(ok, v, err) && v.is_number() && json::to_double(v, d), ok);
    QVERIFY(json::parse("NaN", v, err) && json::to_double(v, d) && std::isnan(d));
    QVERIFY(json::parse("-Infinity", v, err) && json::to_double(v, d) && std::isinf(d) && d < 0);
    QVERIFY(json::parse("42", v, err) && json::to_int(v, i) && i == 42);
    QVERIFY(json::parse("4.2", v, err) && !json::to_int(v, i));
    QVERIFY(json::parse("\"4\"", v, err) && !json::to_int(v, i));
  }

  void errors_say_what_and_where() {
    auto e = fails("{\"a\": [1, 2}");
    QCOMPARE(q(e.message), QString("expected ',' or ']' in an array"));
    QCOMPARE(e.offset, size_t(11));
    QCOMPARE(q(fails("{\"a\" 1}").message), QString("expected ':' after an object key"));
    QCOMPARE(q(fails("{\"a\": \"x").message), QString("unterminated string"));
    QCOMPARE(q(fails("{a: 1}").message), QString("expected a string key"));
    QCOMPARE(q(fails("[01]").message), QString("expected ',' or ']' in an array"));
    QCOMPARE(q(fails("1.").message), QString("bad number: digits must follow '.'"));
    QCOMPARE(q(fails("\"\\x\"").message), QString("bad escape '\\x' in a string"));
    QCOMPARE(q(fails("\"\\u12g4\"").message), QString("bad \\u escape in a string"));
    QCOMPARE(q(fails("\"a\tb\"").message), QString("control character inside a string"));
    QCOMPARE(q(fails("tru").message), QString("unexpected character 't'"));
    QCOMPARE(q(fails("{} x").message), QString("unexpected text after the JSON value"));
    QCOMPARE(q(fails("").message), QString("unexpected end of JSON"));
    QCOMPARE(q(fails("{\"a\": 1,").message), QString("unexpected end of JSON inside an object"));
    std::string deep(300, '[');
    QCOMPARE(q(fails(deep).message), QString("JSON nested too deeply"));
    std::vector<json::Member> ms;
    json::ParseError err;
    QVERIFY(!json::parse_object("[1]", ms, err));
    QCOMPARE(q(err.message), QString("expected a JSON object"));
  }

  void nested_walks() {
    json::Value v;
    json::ParseError err;
    QVERIFY(json::parse("{\"stack\": [{\"line\": 2, \"filename\": 1}, {\"line\": 7, \"filename\": \"x.py\"}]}", v, err));
    auto stack = json::find(v, "stack");
    QVERIFY(stack && stack->is_array());
    std::vector<json::Value> frames;
    json::elements(*stack, frames);
    QCOMPARE(frames.size(), size_t(2));
    int64_t line = 0;
    QVERIFY(json::to_int(*json::find(frames[1], "line"), line));
    QCOMPARE(line, int64_t(7));
    QVERIFY(json::find(frames[1], "filename")->is_string());
    json::elements(*json::find(frames[0], "line"), frames);  // not an array
    QVERIFY(frames.empty());
  }
};

QTEST_APPLESS_MAIN(TestTraceJson)
#include "test_trace_json.moc"
