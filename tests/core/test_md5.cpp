// MD5 against RFC 1321's test suite, incremental updates, and hex parsing.
#include "test_support.h"

#include "core/util/md5.h"

using namespace kiln;

class TestMd5 : public QObject {
  Q_OBJECT
 private slots:
  void rfc1321_vectors_data() {
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<QString>("digest");
    QTest::newRow("empty") << QByteArray("") << "d41d8cd98f00b204e9800998ecf8427e";
    QTest::newRow("a") << QByteArray("a") << "0cc175b9c0f1b6a831c399e269772661";
    QTest::newRow("abc") << QByteArray("abc") << "900150983cd24fb0d6963f7d28e17f72";
    QTest::newRow("message digest") << QByteArray("message digest") << "f96b697d7cb7938d525a2f31aaf161d0";
    QTest::newRow("alphabet") << QByteArray("abcdefghijklmnopqrstuvwxyz") << "c3fcd3d76192e4007dfb496cca67e13b";
    QTest::newRow("alnum") << QByteArray("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
                           << "d174ab98d277d9f5a5611c2c9f419d9f";
    QTest::newRow("digits x8") << QByteArray("1234567890").repeated(8) << "57edf4a22be3c955ac49da2e2107b67a";
  }
  void rfc1321_vectors() {
    QFETCH(QByteArray, input);
    QFETCH(QString, digest);
    QCOMPARE(QString::fromStdString(md5_hex(std::string_view(input.constData(), size_t(input.size())))), digest);
  }

  // Lengths around the 56- and 64-byte padding boundaries, fed in every split.
  void incremental_equals_one_shot() {
    std::string text;
    for (int i = 0; i < 200; ++i) text += char('a' + i % 26);
    for (size_t len : {0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 200}) {
      std::string_view s(text.data(), len);
      Md5Digest whole = md5(s);
      for (size_t cut = 0; cut <= len; cut += (len > 70 ? 7 : 1)) {
        Md5 h;
        h.update(s.substr(0, cut));
        h.update(s.substr(cut));
        QVERIFY2(h.finish() == whole, qPrintable(QString("len %1 cut %2").arg(len).arg(cut)));
      }
    }
    // Byte at a time, and finish() leaves the hasher ready for a new message.
    Md5 h;
    for (char c : std::string("abc")) h.update(&c, 1);
    QCOMPARE(QString::fromStdString(to_hex(h.finish())), QString("900150983cd24fb0d6963f7d28e17f72"));
    h.update("a");
    QCOMPARE(QString::fromStdString(to_hex(h.finish())), QString("0cc175b9c0f1b6a831c399e269772661"));
  }

  // The reference logs' first payload: a chromium event as PyTorch hashed it.
  void torch_trace_payload() {
    std::string payload = "{\n\"name\": \"dynamo\",\n\"ts\": 1795307149402861.0,\n\"args\": {\n\"compile_id\": \"0/0\"\n},\n"
                          "\"ph\": \"B\",\n\"cat\": \"dynamo_timed\",\n\"tid\": 0,\n\"pid\": 0\n}";
    QCOMPARE(QString::fromStdString(md5_hex(payload)), QString("6531b6bdee13a346a0ce65bf8ab9d7a1"));
  }

  void parse_hex() {
    Md5Digest d{};
    QVERIFY(parse_md5_hex("900150983cd24fb0d6963f7d28e17f72", d));
    QCOMPARE(QString::fromStdString(to_hex(d)), QString("900150983cd24fb0d6963f7d28e17f72"));
    QVERIFY(parse_md5_hex("900150983CD24FB0D6963F7D28E17F72", d));
    QCOMPARE(QString::fromStdString(to_hex(d)), QString("900150983cd24fb0d6963f7d28e17f72"));
    QVERIFY(!parse_md5_hex("", d));
    QVERIFY(!parse_md5_hex("900150983cd24fb0d6963f7d28e17f7", d));    // 31 digits
    QVERIFY(!parse_md5_hex("900150983cd24fb0d6963f7d28e17f722", d));  // 33 digits
    QVERIFY(!parse_md5_hex("900150983cd24fb0d6963f7d28e17fzz", d));
  }
};

QTEST_APPLESS_MAIN(TestMd5)
#include "test_md5.moc"
