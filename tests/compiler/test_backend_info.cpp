#include <QtTest/QtTest>

#include "compiler/runtime/backend_info.h"

using namespace kiln;

class TestBackendInfo : public QObject {
  Q_OBJECT
 private slots:
  void llvm_is_19() {
    QVERIFY2(QString::fromStdString(llvm_version()).startsWith("19."), llvm_version().c_str());
    QVERIFY(!llvm_host_cpu().empty());
  }
  void cuda_probe_never_crashes() {
    CudaDriverInfo info = probe_cuda_driver();
    // Either a device with a name, or a reason; never both empty.
    if (info.available) {
      QVERIFY(info.device_count > 0);
      QVERIFY(!info.device_name.empty());
    } else {
      QVERIFY(!info.reason.empty());
    }
  }
};

QTEST_APPLESS_MAIN(TestBackendInfo)
#include "test_backend_info.moc"
