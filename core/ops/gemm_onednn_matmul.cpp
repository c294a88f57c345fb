// oneDNN's matmul primitive with post-ops: a GEMM whose epilogue (a shift,
// bias, addend, relu or tanh gelu) is applied while each tile of C is still in
// cache, instead of a second pass over C after sgemm. At 1024^3 on 16 cores
// that second pass was 7% of the time.
//
// The C API of oneDNN 2.x, opened through the handle gemm_onednn.cpp keeps, so
// that nothing links against libdnnl. Building a primitive costs far more than
// a small product (it generates code), so each is built once per shape,
// strides, epilogue and thread count and kept (up to kMaxPrimitives).
#include <dlfcn.h>

#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <vector>

#include "core/ops/gemm_onednn.h"
#include "core/util/status.h"

#ifdef KILN_WITH_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

namespace kiln::gemm::onednn {

#ifndef KILN_WITH_ONEDNN

bool matmul(int64_t, int64_t, int64_t, float, const float*, int64_t, int64_t, const float*, int64_t, int64_t, float*,
            int64_t, const Epilogue&, int, std::string* why) {
  if (why) *why = "this build has no oneDNN (KILN_ONEDNN=OFF)";
  return false;
}

#else

namespace {

constexpr size_t kMaxPrimitives = 256;

// The entry points, typed by the header's own declarations.
struct Api {
#define KILN_DNNL_FN(name) decltype(&::name) name = nullptr;
  KILN_DNNL_FN(dnnl_engine_create)
  KILN_DNNL_FN(dnnl_stream_create)
  KILN_DNNL_FN(dnnl_stream_wait)
  KILN_DNNL_FN(dnnl_memory_desc_init_by_strides)
  KILN_DNNL_FN(dnnl_matmul_desc_init)
  KILN_DNNL_FN(dnnl_primitive_attr_create)
  KILN_DNNL_FN(dnnl_primitive_attr_destroy)
  KILN_DNNL_FN(dnnl_primitive_attr_set_output_scales)
  KILN_DNNL_FN(dnnl_post_ops_create)
  KILN_DNNL_FN(dnnl_post_ops_destroy)
  KILN_DNNL_FN(dnnl_post_ops_append_eltwise)
  KILN_DNNL_FN(dnnl_post_ops_append_binary)
  KILN_DNNL_FN(dnnl_primitive_attr_set_post_ops)
  KILN_DNNL_FN(dnnl_primitive_desc_create)
  KILN_DNNL_FN(dnnl_primitive_desc_destroy)
  KILN_DNNL_FN(dnnl_primitive_desc_query)
  KILN_DNNL_FN(dnnl_primitive_create)
  KILN_DNNL_FN(dnnl_primitive_destroy)
  KILN_DNNL_FN(dnnl_memory_create)
  KILN_DNNL_FN(dnnl_memory_destroy)
  KILN_DNNL_FN(dnnl_primitive_execute)
#undef KILN_DNNL_FN
  dnnl_engine_t engine = nullptr;
  std::string error;
};

const Api& api() {
  static const Api a = [] {
    Api r;
    void* h = detail::library_handle();
    if (!h) {
      r.error = "oneDNN is not loaded";
      return r;
    }
    bool all = true;
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
      if (!fn && all) r.error = std::string("libdnnl has no ") + name, all = false;
    };
#define KILN_DNNL_SYM(name) sym(r.name, #name);
    KILN_DNNL_SYM(dnnl_engine_create)
    KILN_DNNL_SYM(dnnl_stream_create)
    KILN_DNNL_SYM(dnnl_stream_wait)
    KILN_DNNL_SYM(dnnl_memory_desc_init_by_strides)
    KILN_DNNL_SYM(dnnl_matmul_desc_init)
    KILN_DNNL_SYM(dnnl_primitive_attr_create)
    KILN_DNNL_SYM(dnnl_primitive_attr_destroy)
    KILN_DNNL_SYM(dnnl_primitive_attr_set_output_scales)
    KILN_DNNL_SYM(dnnl_post_ops_create)
    KILN_DNNL_SYM(dnnl_post_ops_destroy)
    KILN_DNNL_SYM(dnnl_post_ops_append_eltwise)
    KILN_DNNL_SYM(dnnl_post_ops_append_binary)
    KILN_DNNL_SYM(dnnl_primitive_attr_set_post_ops)
    KILN_DNNL_SYM(dnnl_primitive_desc_create)
    KILN_DNNL_SYM(dnnl_primitive_desc_destroy)
    KILN_DNNL_SYM(dnnl_primitive_desc_query)
    KILN_DNNL_SYM(dnnl_primitive_create)
    KILN_DNNL_SYM(dnnl_primitive_destroy)
    KILN_DNNL_SYM(dnnl_memory_create)
    KILN_DNNL_SYM(dnnl_memory_destroy)
    KILN_DNNL_SYM(dnnl_primitive_execute)
#undef KILN_DNNL_SYM
    if (all && r.dnnl_engine_create(&r.engine, dnnl_cpu, 0) != dnnl_success) r.error = "oneDNN made no CPU engine";
    return r;
  }();
  return a;
}

// Everything a primitive is specific to (pointers are arguments, not part of it).
struct Shape {
  int64_t m, n, k, a_rs, a_cs, b_rs, b_cs, ldc, addend_ld;
  float alpha, shift;
  bool bias, addend, subtract;
  Activation activation;
  int threads;
  auto tie() const {
    return std::tie(m, n, k, a_rs, a_cs, b_rs, b_cs, ldc, addend_ld, alpha, shift, bias, addend, subtract, activation,
                    threads);
  }
  bool operator<(const Shape& o) const { return tie() < o.tie(); }
};

struct Primitive {
  dnnl_primitive_t primitive = nullptr;
  std::string refused;  // why there is none
  dnnl_memory_desc_t src{}, weights{}, dst{}, bias{}, addend{};
  int bias_post_op = -1, addend_post_op = -1;  // positions in the post-op chain
  ~Primitive() {
    if (primitive) api().dnnl_primitive_destroy(primitive);
  }
};

std::shared_ptr<Primitive> build(const Shape& s) {
  const Api& d = api();
  auto p = std::make_shared<Primitive>();
  auto desc = [&](dnnl_memory_desc_t& md, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
    dnnl_dims_t dims = {rows, cols}, strides = {rs, cs};
    return d.dnnl_memory_desc_init_by_strides(&md, 2, dims, dnnl_f32, strides) == dnnl_success;
  };
  if (!desc(p->src, s.m, s.k, s.a_rs, s.a_cs) || !desc(p->weights, s.k, s.n, s.b_rs, s.b_cs) ||
      !desc(p->dst, s.m, s.n, s.ldc, 1) || (s.bias && !desc(p->bias, 1, s.n, s.n, 1)) ||
      (s.addend && !desc(p->addend, s.m, s.n, s.addend_ld, 1))) {
    p->refused = "oneDNN takes no memory descriptor with these strides";
    return p;
  }
  dnnl_matmul_desc_t op;
  if (d.dnnl_matmul_desc_init(&op, &p->src, &p->weights, nullptr, &p->dst) != dnnl_success) {
    p->refused = "oneDNN refuses the matmul description";
    return p;
  }
  dnnl_primitive_attr_t attr = nullptr;
  dnnl_post_ops_t ops = nullptr;
  d.dnnl_primitive_attr_create(&attr);
  d.dnnl_post_ops_create(&ops);
  bool ok = true;
  if (s.alpha != 1) ok = ok && d.dnnl_primitive_attr_set_output_scales(attr, 1, 0, &s.alpha) == dnnl_success;
  int count = 0;  // post-ops appended so far
  auto appended = [&](dnnl_status_t st) {
    ok = ok && st == dnnl_success;
    return count++;
  };
  if (s.shift != 0) appended(d.dnnl_post_ops_append_eltwise(ops, 1.f, dnnl_eltwise_linear, 1.f, s.shift));
  if (s.bias) p->bias_post_op = appended(d.dnnl_post_ops_append_binary(ops, dnnl_binary_add, &p->bias));
  if (s.addend)
    p->addend_post_op =
        appended(d.dnnl_post_ops_append_binary(ops, s.subtract ? dnnl_binary_sub : dnnl_binary_add, &p->addend));
  if (s.activation != Activation::None)
    appended(d.dnnl_post_ops_append_eltwise(
        ops, 1.f, s.activation == Activation::Relu ? dnnl_eltwise_relu : dnnl_eltwise_gelu_tanh, 0.f, 0.f));
  ok = ok && d.dnnl_primitive_attr_set_post_ops(attr, ops) == dnnl_success;
  dnnl_primitive_desc_t pd = nullptr;
  if (ok) ok = d.dnnl_primitive_desc_create(&pd, &op, attr, d.engine, nullptr) == dnnl_success;
  d.dnnl_post_ops_destroy(ops);
  d.dnnl_primitive_attr_destroy(attr);
  if (!ok) {
    p->refused = "oneDNN has no matmul with this epilogue";
    return p;
  }
  const char* impl = nullptr;
  d.dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
  const std::string name = impl ? impl : "";
  // The reference implementation is a scalar loop, far slower than sgemm and a second pass.
  if (name.empty() || name.rfind("ref", 0) == 0) {
    p->refused = "oneDNN would run its reference matmul (" + (name.empty() ? std::string("unnamed") : name) + ")";
  } else if (d.dnnl_primitive_create(&p->primitive, pd) != dnnl_success) {
    p->primitive = nullptr;
    p->refused = "oneDNN could not create the matmul primitive " + name;
  }
  d.dnnl_primitive_desc_destroy(pd);
  return p;
}

std::shared_ptr<Primitive> primitive_for(const Shape& s) {
  static std::mutex mutex;
  static std::map<Shape, std::shared_ptr<Primitive>> kept;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = kept.find(s); it != kept.end()) return it->second;
  if (kept.size() >= kMaxPrimitives) kept.clear();  // a program cycling through shapes: start over
  return kept[s] = build(s);
}

}  // namespace

bool matmul(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t a_rs, int64_t a_cs, const float* b,
            int64_t b_rs, int64_t b_cs, float* c, int64_t ldc, const Epilogue& e, int threads, std::string* why) {
  const Api& d = api();
  if (!d.engine) {
    if (why) *why = d.error;
    return false;
  }
  threads = detail::prepare_threads(threads);
  Shape s{m, n, k, a_rs, a_cs, b_rs, b_cs, ldc, e.addend ? e.addend_ld : 0, alpha, e.shift, e.bias != nullptr,
          e.addend != nullptr, e.subtract_addend, e.activation, threads};
  std::shared_ptr<Primitive> p = primitive_for(s);
  if (!p->primitive) {
    if (why) *why = p->refused;
    return false;
  }
  // Memory objects are cheap and hold the pointers, so they are made per call;
  // the primitive itself may run on several threads at once.
  std::vector<dnnl_memory_t> memories;
  std::vector<dnnl_exec_arg_t> args;
  auto bind = [&](int arg, const dnnl_memory_desc_t& md, const void* data) {
    dnnl_memory_t mem = nullptr;
    if (d.dnnl_memory_create(&mem, &md, d.engine, const_cast<void*>(data)) != dnnl_success) return false;
    memories.push_back(mem);
    args.push_back({arg, mem});
    return true;
  };
  bool ok = bind(DNNL_ARG_SRC, p->src, a) && bind(DNNL_ARG_WEIGHTS, p->weights, b) && bind(DNNL_ARG_DST, p->dst, c);
  if (ok && e.bias) ok = bind(DNNL_ARG_ATTR_MULTIPLE_POST_OP(p->bias_post_op) | DNNL_ARG_SRC_1, p->bias, e.bias);
  if (ok && e.addend) ok = bind(DNNL_ARG_ATTR_MULTIPLE_POST_OP(p->addend_post_op) | DNNL_ARG_SRC_1, p->addend, e.addend);
  thread_local dnnl_stream_t stream = nullptr;
  if (ok && !stream) ok = d.dnnl_stream_create(&stream, d.engine, dnnl_stream_default_flags) == dnnl_success;
  dnnl_status_t status = dnnl_success;
  if (ok) {
    status = d.dnnl_primitive_execute(p->primitive, stream, int(args.size()), args.data());
    if (status == dnnl_success) status = d.dnnl_stream_wait(stream);
  }
  for (dnnl_memory_t mem : memories) d.dnnl_memory_destroy(mem);
  // The primitive was built for these arguments: failing to run it is a bug,
  // and C may be half written, so it is an error rather than a fallback.
  KILN_CHECK(ok && status == dnnl_success, "oneDNN matmul failed (status ", int(status), ", ", m, " x ", k, " x ", n,
             ")");
  return true;
}

#endif

}  // namespace kiln::gemm::onednn
