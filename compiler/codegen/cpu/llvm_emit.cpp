#include "compiler/codegen/cpu/llvm_emit.h"

#include <cmath>
#include <functional>
#include <map>
#include <set>

#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include "compiler/sched/sched_util.h"
#include "core/util/status.h"

namespace kiln::codegen::cpu {

using namespace loopir;
using llvm::Value;

std::string group_symbol(size_t group) { return "kiln_group" + std::to_string(group); }

namespace {

bool is_unsigned(DType d) { return d == DType::Bool || d == DType::UInt8; }

bool index_outer_only(const IndexRef& i) {
  if (i->kind == IndexKind::Var) return i->value == kOuterVar;
  for (const IndexRef& o : i->operands)
    if (!index_outer_only(o)) return false;
  return true;
}

bool exact_reciprocal(const Expr& e) {
  int exponent = 0;
  return e.op == ExprOp::Constant && std::frexp(e.value, &exponent) == 0.5;
}

// Whether `e` has one value per outer point: it reads no inner or reduction
// variable, so the inner loops see a constant (softmax's row sum).
bool outer_invariant(const Expr& e) {
  if (e.op == ExprOp::Load) return index_outer_only(e.index);
  for (const ExprRef& o : e.operands)
    if (!outer_invariant(*o)) return false;
  return true;
}

class Emitter {
 public:
  Emitter(llvm::LLVMContext& ctx, llvm::Module& m, const Program& p, InjectedBug bug)
      : ctx_(ctx), m_(m), b_(ctx), p_(p), bug_(bug) {}

  void emit_group(const GroupLoops& plan, const std::string& symbol) {
    // Which buffers the group touches: each becomes a noalias parameter of an
    // always-inlined body, so the vectorizer needs no runtime alias checks
    // (the buffer plan never gives a buffer read and one written in the same
    // group the same storage).
    std::vector<std::string> used;
    std::set<std::string> seen;
    auto use = [&](const std::string& b) {
      if (seen.insert(b).second) used.push_back(b);
    };
    for (const KernelLoops& k : plan.kernels) {
      use(k.kernel->output);
      for (const sched::detail::LoadSite& l : sched::detail::collect_loads(k.body)) use(l.buffer);
    }
    llvm::Type* i64 = b_.getInt64Ty();
    llvm::Type* ptr = b_.getPtrTy();

    std::vector<llvm::Type*> body_params(used.size(), ptr);
    body_params.push_back(i64);
    body_params.push_back(i64);
    auto* body_fn = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), body_params, false),
                                           llvm::Function::InternalLinkage, symbol + "_body", m_);
    body_fn->addFnAttr(llvm::Attribute::AlwaysInline);
    body_fn->addFnAttr(llvm::Attribute::NoUnwind);
    for (size_t i = 0; i < used.size(); ++i) body_fn->addParamAttr(unsigned(i), llvm::Attribute::NoAlias);

    auto* entry_fn = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), {ptr, i64, i64}, false),
                                            llvm::Function::ExternalLinkage, symbol, m_);
    entry_fn->addFnAttr(llvm::Attribute::NoUnwind);
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", entry_fn));
    std::vector<Value*> call_args;
    for (const std::string& name : used) {
      Value* slot = b_.CreateConstInBoundsGEP1_64(ptr, entry_fn->getArg(0), uint64_t(p_.buffer_index(name)));
      call_args.push_back(b_.CreateLoad(ptr, slot, name + ".base"));
    }
    call_args.push_back(entry_fn->getArg(1));
    call_args.push_back(entry_fn->getArg(2));
    b_.CreateCall(body_fn, call_args);
    b_.CreateRetVoid();

    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", body_fn));
    base_.clear();
    for (size_t i = 0; i < used.size(); ++i) base_[used[i]] = body_fn->getArg(unsigned(i));
    Value* begin = body_fn->getArg(unsigned(used.size()));
    Value* end = body_fn->getArg(unsigned(used.size() + 1));
    loop(begin, end, {}, [&](Value* outer, const std::vector<Value*>&) {
      for (const KernelLoops& k : plan.kernels) {
        vars_.clear();
        vars_[kOuterVar] = outer;
        ranges_ = &k.ranges;
        if (k.kernel->kind == KernelKind::Reduction) reduction(k);
        else pointwise(k);
      }
      return std::vector<Value*>{};
    });
    b_.CreateRetVoid();
  }

 private:
  using Body = std::function<std::vector<Value*>(Value* iv, const std::vector<Value*>& carried)>;

  // for (iv = lo; iv < hi; ++iv), in the rotated form LLVM's loop passes
  // expect; `carried` values flow from one iteration to the next and out.
  std::vector<Value*> loop(Value* lo, Value* hi, std::vector<Value*> init, const Body& body) {
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx_, "loop", fn);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, "loop.exit", fn);
    auto* clo = llvm::dyn_cast<llvm::ConstantInt>(lo);
    auto* chi = llvm::dyn_cast<llvm::ConstantInt>(hi);
    bool surely_runs = clo && chi && clo->getSExtValue() < chi->getSExtValue();
    if (surely_runs) b_.CreateBr(head);
    else b_.CreateCondBr(b_.CreateICmpSLT(lo, hi), head, exit);

    b_.SetInsertPoint(head);
    llvm::PHINode* iv = b_.CreatePHI(b_.getInt64Ty(), 2, "i");
    iv->addIncoming(lo, pre);
    std::vector<llvm::PHINode*> phis;
    std::vector<Value*> carried;
    for (Value* v : init) {
      phis.push_back(b_.CreatePHI(v->getType(), 2));
      phis.back()->addIncoming(v, pre);
      carried.push_back(phis.back());
    }
    std::vector<Value*> next = body(iv, carried);
    Value* iv_next = b_.CreateAdd(iv, b_.getInt64(1), "", /*HasNUW=*/true, /*HasNSW=*/true);
    llvm::BasicBlock* latch = b_.GetInsertBlock();
    iv->addIncoming(iv_next, latch);
    for (size_t i = 0; i < phis.size(); ++i) phis[i]->addIncoming(next[i], latch);
    b_.CreateCondBr(b_.CreateICmpSLT(iv_next, hi), head, exit);

    b_.SetInsertPoint(exit);
    std::vector<Value*> out;
    for (size_t i = 0; i < next.size(); ++i) {
      if (surely_runs) {
        out.push_back(next[i]);
        continue;
      }
      llvm::PHINode* phi = b_.CreatePHI(next[i]->getType(), 2);
      phi->addIncoming(init[i], pre);
      phi->addIncoming(next[i], latch);
      out.push_back(phi);
    }
    return out;
  }

  // Nested loops over ranges[d..], variables first_var + d, innermost last.
  std::vector<Value*> nest(const std::vector<int64_t>& ranges, int64_t first_var, size_t d,
                           std::vector<Value*> init, const std::function<std::vector<Value*>(const std::vector<Value*>&)>& innermost) {
    if (d == ranges.size()) return innermost(init);
    return loop(b_.getInt64(0), b_.getInt64(ranges[d]), std::move(init), [&](Value* iv, const std::vector<Value*>& c) {
      vars_[first_var + int64_t(d)] = iv;
      return nest(ranges, first_var, d + 1, c, innermost);
    });
  }

  void pointwise(const KernelLoops& k) {
    nest(k.inner_ranges, k.first_inner, 0, {}, [&](const std::vector<Value*>&) {
      memo_.clear();
      Value* v = expr(k.body);
      store(k.kernel->output, k.store_index, v, k.kernel->body->dtype);
      return std::vector<Value*>{};
    });
  }

  void reduction(const KernelLoops& k) {
    const Kernel& K = *k.kernel;
    KILN_CHECK(k.inner_ranges.empty(), "cpu codegen: reduction ", K.output, " has loops outside its outer point");
    const DType out_dtype = p_.buffer(K.output).dtype;
    const DType body_dtype = K.body->dtype;
    const int64_t first_red = int64_t(K.ranges.size());
    // Float sums and products accumulate in double: the accumulated error of
    // a long float32 reduction then stays below what ATen's cascaded sum has.
    DType acc_dtype = out_dtype;
    if ((K.reduction == ReductionType::Sum || K.reduction == ReductionType::Prod) && is_floating(out_dtype))
      acc_dtype = DType::Float64;
    if (K.reduction == ReductionType::Argmax) acc_dtype = body_dtype;
    std::vector<Value*> init;
    switch (K.reduction) {
      case ReductionType::Sum: init = {constant(0, acc_dtype)}; break;
      case ReductionType::Prod: init = {constant(1, acc_dtype)}; break;
      case ReductionType::Any: init = {b_.getFalse()}; acc_dtype = DType::Bool; break;
      case ReductionType::Max: init = {lowest(acc_dtype, true)}; break;
      case ReductionType::Min: init = {lowest(acc_dtype, false)}; break;
      case ReductionType::Argmax: init = {lowest(acc_dtype, true), b_.getInt64(0)}; break;
    }
    const bool chunked = acc_dtype == DType::Float64 && K.reduction == ReductionType::Sum && is_floating(body_dtype) &&
                         !K.reduction_ranges.empty() &&
                         body_dtype != DType::Float64;
    // One step of the reduction at the current values of its variables.
    const DType step_dtype = chunked ? DType::Float32 : acc_dtype;
    auto step = [&](const std::vector<Value*>& acc) -> std::vector<Value*> {
      memo_.clear();
      Value* v = expr(k.body);
      for (const KernelLoops::SideStore& s : k.side_stores) store(s.buffer, s.index, expr(s.value), s.value->dtype);
      switch (K.reduction) {
        case ReductionType::Sum: {
          Value* x = cast(v, body_dtype, step_dtype);
          if (!is_floating(step_dtype)) return std::vector<Value*>{step_dtype == DType::Bool ? b_.CreateOr(acc[0], x) : b_.CreateAdd(acc[0], x)};
          return std::vector<Value*>{reassociable(ExprOp::Add, acc[0], x)};
        }
        case ReductionType::Prod: {
          Value* x = cast(v, body_dtype, acc_dtype);
          if (!is_floating(acc_dtype)) return std::vector<Value*>{acc_dtype == DType::Bool ? b_.CreateAnd(acc[0], x) : b_.CreateMul(acc[0], x)};
          return std::vector<Value*>{reassociable(ExprOp::Mul, acc[0], x)};
        }
        case ReductionType::Any: return std::vector<Value*>{b_.CreateOr(acc[0], cast(v, body_dtype, DType::Bool))};
        case ReductionType::Max: return std::vector<Value*>{max_min(acc[0], cast(v, body_dtype, acc_dtype), acc_dtype, true)};
        case ReductionType::Min: return std::vector<Value*>{max_min(acc[0], cast(v, body_dtype, acc_dtype), acc_dtype, false)};
        case ReductionType::Argmax: {
          // The first maximum wins and a NaN is the maximum, as torch.argmax.
          Value* position = b_.getInt64(0);
          int64_t stride = 1;
          for (size_t d = K.reduction_ranges.size(); d-- > 0;) {
            position = b_.CreateAdd(position, b_.CreateMul(vars_.at(first_red + int64_t(d)), b_.getInt64(stride)));
            stride *= K.reduction_ranges[d];
          }
          Value* take;
          if (is_floating(acc_dtype)) {
            Value* acc_nan = b_.CreateFCmpUNO(acc[0], acc[0]);
            Value* v_nan = b_.CreateFCmpUNO(v, v);
            take = b_.CreateAnd(b_.CreateNot(acc_nan), b_.CreateOr(b_.CreateFCmpOGT(v, acc[0]), v_nan));
          } else {
            take = is_unsigned(acc_dtype) ? b_.CreateICmpUGT(v, acc[0]) : b_.CreateICmpSGT(v, acc[0]);
          }
          take = b_.CreateOr(take, b_.CreateICmpEQ(position, b_.getInt64(0)));
          return std::vector<Value*>{b_.CreateSelect(take, v, acc[0]), b_.CreateSelect(take, position, acc[1])};
        }
      }
      return acc;
    };
    std::vector<Value*> result;
    if (chunked) {
      result = chunked_float_sum(K.reduction_ranges, first_red, init, step);
    } else {
      result = nest(K.reduction_ranges, first_red, 0, init, step);
    }
    if (K.reduction == ReductionType::Argmax) store(K.output, k.store_index, result[1], DType::Int64);
    else store(K.output, k.store_index, result[0], acc_dtype);
  }

  // A float sum in two levels: runs of up to kFloatSumChunk elements of the
  // innermost reduction dimension accumulate in float (one partial sum per
  // vector lane, so full-width vectors and no conversion per element), and
  // each run's sum is added to the double accumulator. The error then stays
  // that of a few dozen float additions however long the row, as with ATen's
  // cascade sum, at the speed of a float loop.
  static constexpr int64_t kFloatSumChunk = 1024;
  template <typename Step>
  std::vector<Value*> chunked_float_sum(const std::vector<int64_t>& ranges, int64_t first_var, std::vector<Value*> init,
                                        const Step& step) {
    std::vector<int64_t> outer_dims(ranges.begin(), ranges.end() - 1);
    const int64_t last_var = first_var + int64_t(ranges.size()) - 1;
    const int64_t n = ranges.back();
    auto run = [&](Value* lo, Value* hi, Value* acc) {
      Value* partial = loop(lo, hi, {constant(0, DType::Float32)}, [&](Value* iv, const std::vector<Value*>& f) {
        vars_[last_var] = iv;
        return step(f);
      })[0];
      return b_.CreateFAdd(acc, b_.CreateFPExt(partial, b_.getDoubleTy()));
    };
    return nest(outer_dims, first_var, 0, std::move(init), [&](const std::vector<Value*>& acc) {
      if (n <= kFloatSumChunk) return std::vector<Value*>{run(b_.getInt64(0), b_.getInt64(n), acc[0])};
      const int64_t chunks = (n + kFloatSumChunk - 1) / kFloatSumChunk;
      return loop(b_.getInt64(0), b_.getInt64(chunks), {acc[0]}, [&](Value* c, const std::vector<Value*>& a) {
        Value* lo = b_.CreateMul(c, b_.getInt64(kFloatSumChunk), "", true, true);
        Value* hi = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateAdd(lo, b_.getInt64(kFloatSumChunk)),
                                             b_.getInt64(n));
        return std::vector<Value*>{run(lo, hi, a[0])};
      });
    });
  }

  // An accumulation the vectorizer may reorder, keeping one partial result per lane.
  Value* reassociable(ExprOp op, Value* acc, Value* x) {
    llvm::IRBuilder<>::FastMathFlagGuard guard(b_);
    llvm::FastMathFlags f;
    f.setAllowReassoc();
    b_.setFastMathFlags(f);
    return op == ExprOp::Add ? b_.CreateFAdd(acc, x) : b_.CreateFMul(acc, x);
  }

  // ---- values ----

  llvm::Type* compute_type(DType d) {
    switch (d) {
      case DType::Bool: return b_.getInt1Ty();
      case DType::UInt8: case DType::Int8: return b_.getInt8Ty();
      case DType::Int16: return b_.getInt16Ty();
      case DType::Int32: return b_.getInt32Ty();
      case DType::Int64: return b_.getInt64Ty();
      case DType::Float16: case DType::BFloat16: case DType::Float32: return b_.getFloatTy();
      case DType::Float64: return b_.getDoubleTy();
    }
    return b_.getFloatTy();
  }

  llvm::Type* memory_type(DType d) {
    switch (d) {
      case DType::Bool: return b_.getInt8Ty();
      case DType::Float16: return b_.getHalfTy();
      case DType::BFloat16: return b_.getInt16Ty();
      default: return compute_type(d);
    }
  }

  Value* constant(double v, DType d) {
    if (is_floating(d)) return round(llvm::ConstantFP::get(compute_type(d), v), d);
    if (d == DType::Bool) return b_.getInt1(v != 0);
    return llvm::ConstantInt::get(compute_type(d), uint64_t(int64_t(v)), true);
  }

  // -inf / the smallest integer (max = true), or +inf / the largest.
  Value* lowest(DType d, bool for_max) {
    if (is_floating(d)) return llvm::ConstantFP::getInfinity(compute_type(d), for_max);
    if (d == DType::Bool) return b_.getInt1(!for_max);
    unsigned bits = compute_type(d)->getIntegerBitWidth();
    llvm::APInt v = is_unsigned(d) ? (for_max ? llvm::APInt::getMinValue(bits) : llvm::APInt::getMaxValue(bits))
                                   : (for_max ? llvm::APInt::getSignedMinValue(bits) : llvm::APInt::getSignedMaxValue(bits));
    return llvm::ConstantInt::get(ctx_, v);
  }

  // A float value rounded to float16 / bfloat16 (kept in a float register).
  Value* round(Value* v, DType d) {
    if (d == DType::Float16) return b_.CreateFPExt(b_.CreateFPTrunc(v, b_.getHalfTy()), b_.getFloatTy());
    if (d != DType::BFloat16) return v;
    // Round to nearest even on the bits, NaNs kept quiet: what c10::BFloat16 does.
    Value* bits = b_.CreateBitCast(v, b_.getInt32Ty());
    Value* lsb = b_.CreateAnd(b_.CreateLShr(bits, 16), b_.getInt32(1));
    Value* rounded = b_.CreateAnd(b_.CreateAdd(b_.CreateAdd(bits, b_.getInt32(0x7FFF)), lsb), b_.getInt32(0xFFFF0000u));
    Value* nan = b_.CreateAnd(b_.CreateOr(bits, b_.getInt32(0x00400000)), b_.getInt32(0xFFFF0000u));
    Value* is_nan = b_.CreateFCmpUNO(v, v);
    return b_.CreateBitCast(b_.CreateSelect(is_nan, nan, rounded), b_.getFloatTy());
  }

  Value* cast(Value* v, DType from, DType to) {
    if (from == to) return v;
    llvm::Type* t = compute_type(to);
    if (to == DType::Bool) {
      if (is_floating(from)) return b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));
      return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
    }
    if (is_floating(to)) {
      Value* f;
      if (is_floating(from)) f = v->getType() == t ? v : b_.CreateFPCast(v, t);
      else f = is_unsigned(from) ? b_.CreateUIToFP(v, t) : b_.CreateSIToFP(v, t);
      return round(f, to);
    }
    if (is_floating(from)) {
      // Saturating and NaN to 0, then wrapped to the width: C++'s int64 cast
      // of the reference, without LLVM's poison for out-of-range values.
      Value* wide = b_.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {b_.getInt64Ty(), v->getType()}, {v});
      return b_.CreateTrunc(wide, t);
    }
    return b_.CreateIntCast(v, t, !is_unsigned(from));
  }

  Value* max_min(Value* a, Value* c, DType d, bool is_max) {
    if (is_floating(d)) return is_max ? b_.CreateMaximum(a, c) : b_.CreateMinimum(a, c);
    if (d == DType::Bool) return is_max ? b_.CreateOr(a, c) : b_.CreateAnd(a, c);
    llvm::Intrinsic::ID id = is_unsigned(d) ? (is_max ? llvm::Intrinsic::umax : llvm::Intrinsic::umin)
                                            : (is_max ? llvm::Intrinsic::smax : llvm::Intrinsic::smin);
    return b_.CreateBinaryIntrinsic(id, a, c);
  }

  Value* libm(const char* f32_name, const char* f64_name, Value* x) {
    bool dbl = x->getType()->isDoubleTy();
    llvm::Function* fn = m_.getFunction(dbl ? f64_name : f32_name);
    if (!fn) {
      auto* type = llvm::FunctionType::get(x->getType(), {x->getType()}, false);
      fn = llvm::Function::Create(type, llvm::Function::ExternalLinkage, dbl ? f64_name : f32_name, m_);
      // No errno, no side effects: what lets the vectorizer call the vector variant.
      fn->setDoesNotAccessMemory();
      fn->setDoesNotThrow();
      fn->addFnAttr(llvm::Attribute::WillReturn);
    }
    return b_.CreateCall(fn, {x});
  }

  // e^x. float: Kiln's own routine, inlined so a loop vectorizes without a
  // call (softmax and sigmoid spent most of their time in libmvec's expf);
  // double: libm. Cody-Waite reduction x = n*ln2 + r with |r| <= ln2/2,
  // Cephes' degree-5 polynomial for e^r (within 2 ulp of libm, which
  // test_codegen_cpu checks over the whole range), then 2^n applied in two
  // halves so subnormal results come out right too.
  Value* exp(Value* x) {
    if (x->getType()->isDoubleTy()) return libm("expf", "exp", x);
    llvm::Type* f = b_.getFloatTy();
    auto c = [&](double v) { return llvm::ConstantFP::get(f, v); };
    auto fma = [&](Value* a, Value* m, Value* add) {
      return b_.CreateIntrinsic(llvm::Intrinsic::fma, {f}, {a, m, add});
    };
    // Compare-and-select clamps are one minps/maxps each; llvm.minimum would
    // add NaN handling here that the last select does anyway.
    Value* clamped = b_.CreateSelect(b_.CreateFCmpOLT(x, c(88.8)), x, c(88.8));
    clamped = b_.CreateSelect(b_.CreateFCmpOGT(clamped, c(-104.0)), clamped, c(-104.0));
    Value* n = b_.CreateUnaryIntrinsic(llvm::Intrinsic::rint, b_.CreateFMul(clamped, c(1.44269504088896341)));
    Value* r = fma(n, c(-0.693359375), clamped);
    r = fma(n, c(2.12194440e-4), r);
    Value* p = c(1.9875691500E-4);
    for (double k : {1.3981999507E-3, 8.3334519073E-3, 4.1665795894E-2, 1.6666665459E-1, 5.0000001201E-1}) p = fma(p, r, c(k));
    p = fma(p, b_.CreateFMul(r, r), b_.CreateFAdd(r, c(1.0)));
    Value* ni = b_.CreateFPToSI(n, b_.getInt32Ty());
    Value* half = b_.CreateAShr(ni, 1);
    auto pow2 = [&](Value* k) {
      return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(k, b_.getInt32(127)), 23), f);
    };
    // Past the ends of float's range the product itself rounds as expf does:
    // above ln(FLT_MAX) n is 128 and p > 1, so p * 2^64 * 2^64 overflows to
    // inf; below -103.972 (the clamp keeps n >= -150) it is under half the
    // smallest subnormal and rounds to 0. Only NaN, which the clamps turned
    // into a number, needs a select.
    Value* y = b_.CreateFMul(b_.CreateFMul(p, pow2(half)), pow2(b_.CreateSub(ni, half)));
    return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, y);
  }

  Value* expr(const ExprRef& e) {
    if (auto it = memo_.find(e.get()); it != memo_.end()) return it->second;
    Value* v = compute(*e);
    if (is_relu(*e) && bug_ != InjectedBug::None) v = inject(v, e->dtype);
    memo_[e.get()] = v;
    return v;
  }

  Value* inject(Value* relu, DType d) {
    switch (bug_) {
      case InjectedBug::ReluAccuracy: return is_floating(d) ? round(b_.CreateFAdd(relu, llvm::ConstantFP::get(relu->getType(), 1.0)), d) : b_.CreateAdd(relu, llvm::ConstantInt::get(relu->getType(), 1));
      case InjectedBug::ReluCompileError:
        throw Error("KILN_INJECT_BUG=relu:compile-error: the CPU code generator refuses relu (an injected bug)");
      case InjectedBug::ReluCrash:
        b_.CreateIntrinsic(llvm::Intrinsic::trap, {}, {});
        return relu;
      case InjectedBug::None: break;
    }
    return relu;
  }

  Value* compute(const Expr& e) {
    const DType d = e.dtype;
    if (e.op == ExprOp::Load) return load(e.buffer, e.index, d);
    if (e.op == ExprOp::Constant) return constant(e.value, d);
    std::vector<Value*> a;
    for (const ExprRef& o : e.operands) a.push_back(expr(o));
    auto operand = [&](size_t i, DType as) { return cast(a[i], e.operands[i]->dtype, as); };
    const bool fl = is_floating(d);
    switch (e.op) {
      case ExprOp::ToDtype: return cast(a[0], e.operands[0]->dtype, d);
      case ExprOp::Neg: return fl ? round(b_.CreateFNeg(operand(0, d)), d) : b_.CreateNeg(operand(0, d));
      case ExprOp::Abs:
        if (fl) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, operand(0, d));
        if (is_unsigned(d)) return operand(0, d);
        return b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, operand(0, d), b_.getFalse());
      case ExprOp::Exp: return round(exp(float_operand(e, a, 0)), d);
      case ExprOp::Log: return round(libm("logf", "log", float_operand(e, a, 0)), d);
      case ExprOp::Sin: return round(libm("sinf", "sin", float_operand(e, a, 0)), d);
      case ExprOp::Cos: return round(libm("cosf", "cos", float_operand(e, a, 0)), d);
      case ExprOp::Tanh: return round(libm("tanhf", "tanh", float_operand(e, a, 0)), d);
      case ExprOp::Sqrt: return round(b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, float_operand(e, a, 0)), d);
      case ExprOp::Rsqrt: {
        Value* x = float_operand(e, a, 0);
        return round(b_.CreateFDiv(llvm::ConstantFP::get(x->getType(), 1.0), b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x)), d);
      }
      case ExprOp::Sigmoid: {
        Value* x = float_operand(e, a, 0);
        Value* one = llvm::ConstantFP::get(x->getType(), 1.0);
        return round(b_.CreateFDiv(one, b_.CreateFAdd(one, exp(b_.CreateFNeg(x)))), d);
      }
      case ExprOp::Div:
        // (A power of two LLVM turns into an exact multiplication itself.)
        if (is_floating(d) && !exact_reciprocal(*e.operands[1]) && outer_invariant(*e.operands[1]))
          return round(divide_by_invariant(operand(0, d), operand(1, d)), d);
        return arithmetic(e.op, operand(0, d), operand(1, d), d);
      case ExprOp::Add: case ExprOp::Sub: case ExprOp::Mul:
        return arithmetic(e.op, operand(0, d), operand(1, d), d);
      case ExprOp::Maximum: return max_min(operand(0, d), operand(1, d), d, true);
      case ExprOp::Minimum: return max_min(operand(0, d), operand(1, d), d, false);
      case ExprOp::Eq: case ExprOp::Ne: case ExprOp::Lt: case ExprOp::Le: case ExprOp::Gt: case ExprOp::Ge: {
        DType common = e.operands[0]->dtype;
        return compare(e.op, a[0], operand(1, common), common);
      }
      case ExprOp::Where: return b_.CreateSelect(operand(0, DType::Bool), operand(1, d), operand(2, d));
      case ExprOp::Load: case ExprOp::Constant: break;
    }
    throw Error("cpu codegen: no rule for " + std::string(expr_op_name(e.op)) + " in " + std::string(dtype_name(d)));
  }

  // Math functions take the expression's dtype when floating, else float32 (as ATen promotes integers).
  Value* float_operand(const Expr& e, const std::vector<Value*>& a, size_t i) {
    DType as = is_floating(e.dtype) ? e.dtype : DType::Float32;
    return cast(a[i], e.operands[i]->dtype, as);
  }

  // x / y for a y that is the same across the inner loops (softmax's row
  // sum): a vector division costs as much as ten multiplications, so the
  // reciprocal is taken once (LICM hoists everything that reads y alone) and
  // each element pays two multiplications and two FMAs. Not x * (1/y), which
  // is an ulp off and infinite for a subnormal y: y is first scaled by a power
  // of two into the range where 1/y is a normal number (x by the same power,
  // exactly), and Markstein's correction q + r * (x - q * y) makes the quotient
  // the correctly rounded one. Where the correction is NaN (x or y infinite,
  // y zero) or q is a zero (whose sign the correction's additions would
  // lose), the uncorrected x * (1/y) already is what the division gives.
  Value* divide_by_invariant(Value* x, Value* y) {
    const bool single = y->getType()->isFloatTy();
    auto c = [&](double v) { return llvm::ConstantFP::get(y->getType(), v); };
    const double big = single ? 0x1p100 : 0x1p900, small = single ? 0x1p-100 : 0x1p-900;
    Value* magnitude = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, y);
    Value* scale = b_.CreateSelect(b_.CreateFCmpOLT(magnitude, c(small)), c(big),
                                   b_.CreateSelect(b_.CreateFCmpOGT(magnitude, c(big)), c(small), c(1.0)));
    Value* ys = b_.CreateFMul(y, scale);
    Value* r = b_.CreateFDiv(c(1.0), ys);
    Value* xs = b_.CreateFMul(x, scale);
    Value* q = b_.CreateFMul(xs, r);
    Value* remainder = b_.CreateIntrinsic(llvm::Intrinsic::fma, {y->getType()}, {b_.CreateFNeg(q), ys, xs});
    Value* corrected = b_.CreateIntrinsic(llvm::Intrinsic::fma, {y->getType()}, {remainder, r, q});
    Value* keep_q = b_.CreateOr(b_.CreateFCmpUNO(corrected, corrected),
                                b_.CreateFCmpOEQ(q, llvm::ConstantFP::get(y->getType(), 0.0)));
    return b_.CreateSelect(keep_q, q, corrected);
  }

  Value* arithmetic(ExprOp op, Value* x, Value* y, DType d) {
    if (is_floating(d)) {
      switch (op) {
        case ExprOp::Add: return round(b_.CreateFAdd(x, y), d);
        case ExprOp::Sub: return round(b_.CreateFSub(x, y), d);
        case ExprOp::Mul: return round(b_.CreateFMul(x, y), d);
        default: return round(b_.CreateFDiv(x, y), d);
      }
    }
    if (d == DType::Bool) {
      if (op == ExprOp::Add) return b_.CreateOr(x, y);
      if (op == ExprOp::Mul) return b_.CreateAnd(x, y);
      throw Error("cpu codegen: " + std::string(expr_op_name(op)) + " on bool");
    }
    switch (op) {
      case ExprOp::Add: return b_.CreateAdd(x, y);
      case ExprOp::Sub: return b_.CreateSub(x, y);
      case ExprOp::Mul: return b_.CreateMul(x, y);
      default: break;
    }
    // Integer division truncates, as the reference's int cast of the
    // quotient; a zero divisor gives 0 instead of a SIGFPE in generated code.
    Value* zero = llvm::ConstantInt::get(y->getType(), 0);
    Value* is_zero = b_.CreateICmpEQ(y, zero);
    Value* safe = b_.CreateSelect(is_zero, llvm::ConstantInt::get(y->getType(), 1), y);
    Value* q = is_unsigned(d) ? b_.CreateUDiv(x, safe) : b_.CreateSDiv(x, safe);
    return b_.CreateSelect(is_zero, zero, q);
  }

  Value* compare(ExprOp op, Value* x, Value* y, DType d) {
    if (is_floating(d)) {
      switch (op) {
        case ExprOp::Eq: return b_.CreateFCmpOEQ(x, y);
        case ExprOp::Ne: return b_.CreateFCmpUNE(x, y);
        case ExprOp::Lt: return b_.CreateFCmpOLT(x, y);
        case ExprOp::Le: return b_.CreateFCmpOLE(x, y);
        case ExprOp::Gt: return b_.CreateFCmpOGT(x, y);
        default: return b_.CreateFCmpOGE(x, y);
      }
    }
    bool u = is_unsigned(d);
    switch (op) {
      case ExprOp::Eq: return b_.CreateICmpEQ(x, y);
      case ExprOp::Ne: return b_.CreateICmpNE(x, y);
      case ExprOp::Lt: return u ? b_.CreateICmpULT(x, y) : b_.CreateICmpSLT(x, y);
      case ExprOp::Le: return u ? b_.CreateICmpULE(x, y) : b_.CreateICmpSLE(x, y);
      case ExprOp::Gt: return u ? b_.CreateICmpUGT(x, y) : b_.CreateICmpSGT(x, y);
      default: return u ? b_.CreateICmpUGE(x, y) : b_.CreateICmpSGE(x, y);
    }
  }

  // ---- memory ----

  Value* address(const std::string& buffer, const IndexRef& index, DType d) {
    return b_.CreateInBoundsGEP(memory_type(d), base_.at(buffer), index_value(index));
  }

  Value* load(const std::string& buffer, const IndexRef& index, DType want) {
    DType d = p_.buffer(buffer).dtype;
    Value* raw = b_.CreateLoad(memory_type(d), address(buffer, index, d));
    Value* v = raw;
    if (d == DType::Bool) v = b_.CreateICmpNE(raw, b_.getInt8(0));
    else if (d == DType::Float16) v = b_.CreateFPExt(raw, b_.getFloatTy());
    else if (d == DType::BFloat16) v = b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(raw, b_.getInt32Ty()), 16), b_.getFloatTy());
    return cast(v, d, want);
  }

  void store(const std::string& buffer, const IndexRef& index, Value* v, DType from) {
    DType d = p_.buffer(buffer).dtype;
    v = cast(v, from, d);
    if (d == DType::Bool) v = b_.CreateZExt(v, b_.getInt8Ty());
    else if (d == DType::Float16) v = b_.CreateFPTrunc(v, b_.getHalfTy());
    else if (d == DType::BFloat16) v = b_.CreateTrunc(b_.CreateLShr(b_.CreateBitCast(v, b_.getInt32Ty()), 16), b_.getInt16Ty());
    b_.CreateStore(v, address(buffer, index, d));
  }

  // ---- indices ----

  bool non_negative(const IndexRef& e) const { return index_range(e, *ranges_).lo >= 0; }

  Value* index_value(const IndexRef& e) {
    switch (e->kind) {
      case IndexKind::Const: return b_.getInt64(uint64_t(e->value));
      case IndexKind::Var: {
        auto it = vars_.find(e->value);
        KILN_CHECK(it != vars_.end(), "cpu codegen: loop variable x", e->value, " unbound in ", to_string(e));
        return it->second;
      }
      case IndexKind::Sym: throw Error("cpu codegen: symbolic size " + e->name + " (compile with concrete sizes)");
      case IndexKind::Add: case IndexKind::Mul: {
        Value* acc = index_value(e->operands[0]);
        for (size_t i = 1; i < e->operands.size(); ++i)
          acc = e->kind == IndexKind::Add ? b_.CreateAdd(acc, index_value(e->operands[i]))
                                          : b_.CreateMul(acc, index_value(e->operands[i]));
        return acc;
      }
      case IndexKind::Min: return b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, index_value(e->operands[0]), index_value(e->operands[1]));
      case IndexKind::Max: return b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, index_value(e->operands[0]), index_value(e->operands[1]));
      case IndexKind::FloorDiv: case IndexKind::Mod: break;
    }
    Value* a = index_value(e->operands[0]);
    Value* d = index_value(e->operands[1]);
    const IndexRef& divisor = e->operands[1];
    bool positive_divisor = divisor->kind == IndexKind::Const && divisor->value > 0;
    if (positive_divisor && non_negative(e->operands[0]))
      return e->kind == IndexKind::FloorDiv ? b_.CreateUDiv(a, d) : b_.CreateURem(a, d);
    // Python rounding toward -inf for operands of any sign.
    Value* q = b_.CreateSDiv(a, d);
    Value* r = b_.CreateSRem(a, d);
    Value* fix = b_.CreateAnd(b_.CreateICmpNE(r, b_.getInt64(0)),
                              b_.CreateICmpNE(b_.CreateICmpSLT(r, b_.getInt64(0)), b_.CreateICmpSLT(d, b_.getInt64(0))));
    if (e->kind == IndexKind::FloorDiv) return b_.CreateSub(q, b_.CreateZExt(fix, b_.getInt64Ty()));
    return b_.CreateAdd(r, b_.CreateSelect(fix, d, b_.getInt64(0)));
  }

  llvm::LLVMContext& ctx_;
  llvm::Module& m_;
  llvm::IRBuilder<> b_;
  const Program& p_;
  InjectedBug bug_;
  std::map<std::string, Value*> base_;
  std::map<int64_t, Value*> vars_;
  std::map<const Expr*, Value*> memo_;
  const IndexRanges* ranges_ = nullptr;
};

}  // namespace

std::unique_ptr<llvm::Module> emit_module(llvm::LLVMContext& ctx, const sched::ScheduledProgram& s,
                                          const std::vector<GroupLoops>& plans, InjectedBug bug) {
  auto module = std::make_unique<llvm::Module>("kiln", ctx);
  Emitter emitter(ctx, *module, s.program, bug);
  for (size_t g = 0; g < s.groups.size(); ++g)
    if (plans[g].has_function()) emitter.emit_group(plans[g], group_symbol(g));
  std::string problems;
  llvm::raw_string_ostream os(problems);
  KILN_CHECK(!llvm::verifyModule(*module, &os), "cpu codegen built invalid LLVM IR: ", problems);
  return module;
}

}  // namespace kiln::codegen::cpu
