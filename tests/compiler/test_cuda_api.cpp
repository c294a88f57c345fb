// The dlopen layer over NVRTC and the CUDA driver: NVRTC must compile real
// kernels wherever it is installed (this image has CUDA 13 in
// /usr/local/cuda/lib64), and the driver entry points must fail cleanly on a
// machine without a GPU and work on one with a GPU.
#include <QtTest/QtTest>

#include <cstring>
#include <numeric>
#include <vector>

#include "compiler/codegen/cuda/cuda_api.h"

using namespace kiln::codegen::cuda;
using kiln::Status;

namespace {

// A float4 add plus a warp-shuffle reduction of the result into *sum: it
// exercises vector types, intrinsics and atomics, the pieces generated kernels use.
const char* kKernel = R"(
extern "C" __global__ void vec_add_sum(const float4* a, const float4* b, float4* out, float* sum, int n4) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float local = 0.f;
  if (i < n4) {
    float4 x = a[i], y = b[i];
    float4 r = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    out[i] = r;
    local = r.x + r.y + r.z + r.w;
  }
  for (int offset = 16; offset > 0; offset >>= 1) local += __shfl_down_sync(0xffffffffu, local, offset);
  if ((threadIdx.x & 31) == 0) atomicAdd(sum, local);
}
)";

// Line 4 lacks its semicolon; NVRTC reports it against the next line's token.
const char* kBroken = R"(
extern "C" __global__ void broken(float* p) {
  int i = threadIdx.x;
  float v = p[i] * 2.0f
  p[i] = v;
}
)";

bool env_flag(const char* name) { return qgetenv(name) == "1"; }

}  // namespace

class TestCudaApi : public QObject {
  Q_OBJECT

  // True when the test may go on; a missing NVRTC fails unless allowed.
  bool nvrtc_or_skip_reason(QString& reason) {
    std::string d = nvrtc_describe();
    if (d.rfind("unavailable", 0) != 0) return true;
    reason = QString::fromStdString(d);
    return false;
  }

 private slots:
  void compilesToPtxAndCubin() {
    QString why;
    if (!nvrtc_or_skip_reason(why)) {
      if (env_flag("KILN_ALLOW_NO_NVRTC")) QSKIP(qPrintable("NVRTC not loadable: " + why));
      QFAIL(qPrintable("NVRTC not loadable (set KILN_ALLOW_NO_NVRTC=1 to skip): " + why));
    }
    qInfo("%s", nvrtc_describe().c_str());

    auto ptx = nvrtc_compile(kKernel, "vec_add_sum.cu", 90, /*want_cubin=*/false);
    QVERIFY2(ptx.ok(), ptx.status().message().c_str());
    QVERIFY(ptx->cubin.empty());
    QVERIFY2(ptx->ptx.find(".entry vec_add_sum") != std::string::npos, ptx->ptx.substr(0, 800).c_str());
    QVERIFY(ptx->ptx.find(".target sm_90") != std::string::npos);
    QVERIFY(ptx->ptx.find("shfl.sync.down") != std::string::npos);  // the intrinsic survived
    QVERIFY(ptx->ms > 0);

    auto cubin = nvrtc_compile(kKernel, "vec_add_sum.cu", 90, /*want_cubin=*/true);
    QVERIFY2(cubin.ok(), cubin.status().message().c_str());
    QVERIFY(cubin->cubin.size() > 64);
    QCOMPARE(cubin->cubin.substr(0, 4), std::string("\x7f" "ELF"));
    // The kernel name is in the ELF symbol table.
    QVERIFY(cubin->cubin.find("vec_add_sum") != std::string::npos);
  }

  void compileErrorCarriesLogWithLine() {
    QString why;
    if (!nvrtc_or_skip_reason(why)) {
      if (env_flag("KILN_ALLOW_NO_NVRTC")) QSKIP(qPrintable("NVRTC not loadable: " + why));
      QFAIL(qPrintable("NVRTC not loadable: " + why));
    }
    auto r = nvrtc_compile(kBroken, "broken.cu", 90, false);
    QVERIFY(!r.ok());
    const std::string& msg = r.status().message();
    qInfo("%s", msg.c_str());
    QVERIFY2(msg.find("broken.cu(5): error") != std::string::npos, msg.c_str());
    QVERIFY2(msg.find("expected a \";\"") != std::string::npos, msg.c_str());
    QVERIFY2(msg.find("--gpu-architecture=compute_90") != std::string::npos, msg.c_str());
  }

  void badOptionIsAnErrorNotACrash() {
    QString why;
    if (!nvrtc_or_skip_reason(why)) QSKIP("NVRTC not loadable");
    auto r = nvrtc_compile(kKernel, "opt.cu", 90, false, {"--no-such-option"});
    QVERIFY(!r.ok());
    // NVRTC's own words, not only our echo of the options.
    QVERIFY2(r.status().message().find("unrecognized option --no-such-option") != std::string::npos,
             r.status().message().c_str());
  }

  // The search itself, without the process-wide cache: a KILN_CUDA_LIBRARY_PATH
  // folder wins over the loader's own search, and a miss lists every attempt.
  // The probe is a copy of libcudart under a made-up name, so only the folder
  // search can find it (and the loader cannot hand back an already-mapped file).
  void librarySearchOrder() {
    const QString cudart = "/usr/local/cuda/lib64/libcudart.so.13";
    if (!QFileInfo::exists(cudart)) QSKIP("no CUDA 13 toolkit here");
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QVERIFY(QFile::copy(cudart, dir.path() + "/libkilnprobe.so.1"));
    struct RestoreEnv {
      ~RestoreEnv() { qunsetenv("KILN_CUDA_LIBRARY_PATH"); }
    } restore;
    qputenv("KILN_CUDA_LIBRARY_PATH", "/nonexistent:" + dir.path().toUtf8());
    auto found = load_cuda_library("probe", nullptr, {"libkilnprobe.so.1"}, {});
    QVERIFY2(found.ok(), found.status().message().c_str());
    QCOMPARE(QString::fromStdString(found->path), dir.path() + "/libkilnprobe.so.1");

    auto missing = load_cuda_library("libkilnnothing", "KILN_TEST_UNSET_VARIABLE", {"libkilnnothing.so.7"},
                                     {"/nonexistent/lib"});
    QVERIFY(!missing.ok());
    const std::string& msg = missing.status().message();
    QVERIFY2(msg.find("libkilnnothing not found:\n  dlopen libkilnnothing.so.7: ") == 0, msg.c_str());
    QVERIFY2(msg.find("also searched: /nonexistent/lib") != std::string::npos, msg.c_str());
    QVERIFY2(msg.find("KILN_CUDA_LIBRARY_PATH") != std::string::npos, msg.c_str());
    QVERIFY2(msg.find("set KILN_TEST_UNSET_VARIABLE") != std::string::npos, msg.c_str());
  }

  // The library is loaded once per process, so the override is checked in a
  // child copy of this test with the variable set.
  void explicitLibraryOverrideFailsClearly() {
    if (env_flag("KILN_CUDA_API_TEST_CHILD")) {
      auto r = nvrtc_compile(kKernel, "x.cu", 90, false);
      QVERIFY(!r.ok());
      const std::string& msg = r.status().message();
      QVERIFY2(msg.find("NVRTC not found: KILN_NVRTC_LIBRARY=/nonexistent/libnvrtc.so") != std::string::npos,
               msg.c_str());
      QVERIFY2(msg.find("No such file") != std::string::npos, msg.c_str());
      QVERIFY(nvrtc_describe().rfind("unavailable: NVRTC not found", 0) == 0);
      return;
    }
    QProcess child;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("KILN_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so");
    env.insert("KILN_CUDA_API_TEST_CHILD", "1");
    child.setProcessEnvironment(env);
    child.start(QCoreApplication::applicationFilePath(), {"explicitLibraryOverrideFailsClearly"});
    QVERIFY(child.waitForFinished(60000));
    QByteArray out = child.readAllStandardOutput() + child.readAllStandardError();
    QVERIFY2(child.exitStatus() == QProcess::NormalExit && child.exitCode() == 0, out.constData());
  }

  // On a machine without a GPU every driver entry point reports why; on one
  // with a GPU the same test runs the compiled kernel end to end.
  void driverWorksOrFailsCleanly() {
    Status init = cuda_init();
    qInfo("driver: %s", cuda_describe().c_str());
    if (!init.ok()) {
      if (env_flag("KILN_REQUIRE_GPU")) QFAIL(init.message().c_str());
      const std::string& msg = init.message();
      QVERIFY2(msg.find("CUDA driver not found") != std::string::npos || msg.find("cuInit") != std::string::npos ||
                   msg.find("no device") != std::string::npos,
               msg.c_str());
      QCOMPARE(cuda_init().message(), msg);  // the failure is remembered, not retried
      auto info = cuda_device_info();
      QVERIFY(!info.ok());
      auto buf = DeviceBuffer::alloc(1 << 20);
      QVERIFY(!buf.ok());
      QCOMPARE(buf.status().message(), msg);
      QVERIFY(!Stream::create().ok());
      QVERIFY(!Event::create().ok());
      QVERIFY(!CudaModule::load("not an image").ok());
      QVERIFY(!launch(nullptr, {}, {}, 0, nullptr).ok());
      CudaGraph graph;
      Stream none;
      QVERIFY(!graph.capture_begin(none).ok());
      QVERIFY(!graph.replay(none).ok());
      QVERIFY(cuda_describe().rfind("unavailable: ", 0) == 0);
      return;
    }
    run_on_gpu();
  }

 private:
  void run_on_gpu() {
    auto info = cuda_device_info();
    QVERIFY2(info.ok(), info.status().message().c_str());
    QVERIFY(!info->name.empty());
    QVERIFY(info->sm_major >= 7);
    QVERIFY(info->multiprocessors > 0);
    QVERIFY(info->total_memory > (int64_t(1) << 30));

    // 1 MiB round trip.
    const int n = 1 << 18;  // floats
    std::vector<float> a(n, 1.0f), b(n), back(n);
    for (int i = 0; i < n; ++i) b[i] = float(i % 4);
    auto da = DeviceBuffer::alloc(n * sizeof(float));
    QVERIFY2(da.ok(), da.status().message().c_str());
    QVERIFY(da->upload(b.data(), n * sizeof(float)).ok());
    QVERIFY(da->download(back.data(), n * sizeof(float)).ok());
    QVERIFY(std::memcmp(b.data(), back.data(), n * sizeof(float)) == 0);
    QVERIFY(!da->upload(b.data(), n * sizeof(float) + 1).ok());  // bounds are checked

    // Launch the cubin for this device's own architecture.
    int sm = info->sm_major * 10 + info->sm_minor;
    auto compiled = nvrtc_compile(kKernel, "vec_add_sum.cu", sm, true);
    QVERIFY2(compiled.ok(), compiled.status().message().c_str());
    auto module = CudaModule::load(compiled->cubin);
    QVERIFY2(module.ok(), module.status().message().c_str());
    auto fn = module->function("vec_add_sum");
    QVERIFY2(fn.ok(), fn.status().message().c_str());
    QVERIFY(!module->function("no_such_kernel").ok());

    auto db = DeviceBuffer::alloc(n * sizeof(float));
    auto dout = DeviceBuffer::alloc(n * sizeof(float));
    auto dsum = DeviceBuffer::alloc(sizeof(float));
    QVERIFY(db.ok() && dout.ok() && dsum.ok());
    QVERIFY(da->upload(a.data(), n * sizeof(float)).ok());
    QVERIFY(db->upload(b.data(), n * sizeof(float)).ok());
    QVERIFY(dsum->zero().ok());
    CUdeviceptr pa = da->ptr(), pb = db->ptr(), pout = dout->ptr(), psum = dsum->ptr();
    int n4 = n / 4;
    void* args[] = {&pa, &pb, &pout, &psum, &n4};
    auto stream = Stream::create();
    QVERIFY(stream.ok());
    auto start = Event::create(), end = Event::create();
    QVERIFY(start.ok() && end.ok());
    QVERIFY(start->record(*stream).ok());
    Status st = launch(*fn, {unsigned(n4 / 256)}, {256}, 0, args, &*stream);
    QVERIFY2(st.ok(), st.message().c_str());
    QVERIFY(end->record(*stream).ok());
    QVERIFY(stream->synchronize().ok());
    auto ms = Event::elapsed_ms(*start, *end);
    QVERIFY2(ms.ok(), ms.status().message().c_str());
    float sum = 0;
    QVERIFY(dsum->download(&sum, sizeof sum).ok());
    // Every value is 1 + (i % 4), so the total is n * 2.5, exact in float.
    QCOMPARE(sum, float(n) * 2.5f);
    QVERIFY(dout->download(back.data(), n * sizeof(float)).ok());
    for (int i = 0; i < n; i += 997) QCOMPARE(back[i], 1.0f + float(i % 4));

    // The same launch captured once and replayed twice adds the sum twice more.
    CudaGraph graph;
    QVERIFY(graph.capture_begin(*stream).ok());
    QVERIFY(launch(*fn, {unsigned(n4 / 256)}, {256}, 0, args, &*stream).ok());
    st = graph.capture_end(*stream);
    QVERIFY2(st.ok(), st.message().c_str());
    QVERIFY(graph.replay(*stream).ok());
    QVERIFY(graph.replay(*stream).ok());
    QVERIFY(stream->synchronize().ok());
    QVERIFY(dsum->download(&sum, sizeof sum).ok());
    QCOMPARE(sum, float(n) * 2.5f * 3);

    // A PTX image goes through the driver's JIT; a corrupt one names the call.
    auto ptx = nvrtc_compile(kKernel, "vec_add_sum.cu", sm, false);
    QVERIFY(ptx.ok());
    QVERIFY2(CudaModule::load(ptx->ptx).ok(), "PTX module load failed");
    auto bad = CudaModule::load(".version 99.0\n.target sm_90\n");
    QVERIFY(!bad.ok());
    QVERIFY2(bad.status().message().rfind("cuModuleLoadDataEx: CUDA_ERROR_", 0) == 0, bad.status().message().c_str());
  }
};

QTEST_GUILESS_MAIN(TestCudaApi)
#include "test_cuda_api.moc"
