// The ZIP store under torch.save files: records round-trip with their data
// 64-byte aligned, and every kind of damage is an error naming the file,
// never a read outside it.
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/io/zip_store.h"

using namespace kiln;

namespace {

std::vector<std::byte> bytes_of(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), reinterpret_cast<const std::byte*>(s.data()) + s.size()};
}

std::vector<std::byte> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return bytes_of(s);
}

void write_all(const std::string& path, const std::vector<std::byte>& b) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

size_t find(const std::vector<std::byte>& hay, const std::string& needle) {
  const std::vector<std::byte> n = bytes_of(needle);
  return size_t(std::search(hay.begin(), hay.end(), n.begin(), n.end()) - hay.begin());
}

}  // namespace

class TestZipStore : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  std::string path(const char* name) { return dir_.filePath(name).toStdString(); }

  // Writes a two-record archive and returns its bytes.
  std::vector<std::byte> sample(const std::string& p) {
    const std::vector<std::byte> a = bytes_of("pickle bytes"), b = bytes_of(std::string(100, 'x'));
    const Status s = write_zip_store(p, {{"ck/data.pkl", a}, {"ck/data/0", b}});
    if (!s.ok()) qFatal("%s", s.message().c_str());
    return read_all(p);
  }

  void expect_error(const std::vector<std::byte>& b, const char* why) {
    const std::string p = path("damaged.pt");
    write_all(p, b);
    Expected<ZipStore> z = read_zip_store(p, 1 << 20);
    QVERIFY2(!z.ok(), why);
    QVERIFY2(z.status().message().find(p) != std::string::npos, z.status().message().c_str());
    QVERIFY2(z.status().message().find(why) != std::string::npos, z.status().message().c_str());
  }

 private slots:
  void crcMatchesTheStandardCheckValue() { QCOMPARE(crc32(bytes_of("123456789")), 0xcbf43926u); }

  void recordsRoundTripAligned() {
    const std::string p = path("ok.pt");
    sample(p);
    Expected<ZipStore> z = read_zip_store(p, 1 << 20);
    QVERIFY2(z.ok(), z.status().message().c_str());
    QCOMPARE(z.value().entries.size(), size_t(2));
    const ZipStore::Entry* e = z.value().find("ck/data/0");
    QVERIFY(e);
    QCOMPARE(e->size, size_t(100));
    QCOMPARE(e->offset % 64, size_t(0));
    QCOMPARE(char(z.value().data(*e)[99]), 'x');
    QVERIFY(!z.value().find("ck/data/1"));
    QVERIFY(!std::filesystem::exists(p + ".tmp"));
  }

  void damageIsNamed() {
    const std::vector<std::byte> good = sample(path("base.pt"));
    std::vector<std::byte> b = good;
    b[find(b, std::string(100, 'x')) + 5] = std::byte{'y'};
    expect_error(b, "fails its CRC-32 check");

    b = std::vector<std::byte>(good.begin(), good.begin() + long(good.size() / 2));
    expect_error(b, "no ZIP end record");

    b = good;
    b[8] = std::byte{8};  // the first local header says deflate; the central directory is what counts
    const size_t central = find(b, "PK\x01\x02");
    b[central + 10] = std::byte{8};
    expect_error(b, "is compressed");

    b = good;
    const size_t end = find(b, "PK\x05\x06");
    b[end + 16] = std::byte{0xff};  // central directory offset past the file
    b[end + 17] = std::byte{0xff};
    b[end + 18] = std::byte{0xff};
    b[end + 19] = std::byte{0x7f};
    expect_error(b, "central directory outside the file");

    b = good;
    b[central + 24] = std::byte{0xff};  // record size past the data
    b[central + 25] = std::byte{0xff};
    b[central + 20] = std::byte{0xff};
    b[central + 21] = std::byte{0xff};
    expect_error(b, "runs past the data");

    expect_error(bytes_of("not a zip at all, just text"), "no ZIP end record");
  }

  void sizeLimitHolds() {
    const std::string p = path("limit.pt");
    sample(p);
    Expected<ZipStore> z = read_zip_store(p, 64);
    QVERIFY(!z.ok());
    QVERIFY(z.status().message().find("this run may load") != std::string::npos);
  }
};

QTEST_GUILESS_MAIN(TestZipStore)
#include "test_zip_store.moc"
