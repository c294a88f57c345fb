// torch.nn.functional losses: the reduction argument (with the legacy
// size_average / reduce pair), the size checks torch/nn/functional.py makes
// before calling the ATen loss, and the ATen loss itself.
#include "core/python/torch_api_binding.h"

namespace kiln::torchapi::detail {
namespace {

const char* const kF = "torch.nn.functional";

// torch.nn._reduction: 'none' 0, 'mean' 1, 'sum' 2; size_average/reduce override it.
int64_t reduction_enum(const Value& size_average, const Value& reduce, const std::string& reduction) {
  if (!size_average.is_none() || !reduce.is_none()) {
    bool avg = size_average.is_none() || size_average.to_bool();
    bool red = reduce.is_none() || reduce.to_bool();
    if (!red) return 0;
    return avg ? 1 : 2;
  }
  if (reduction == "none") return 0;
  if (reduction == "mean") return 1;
  if (reduction == "sum") return 2;
  KILN_FAIL(reduction, " is not a valid value for reduction");
}

// Elementwise losses broadcast input and target (with a warning in PyTorch).
std::pair<Value, Value> broadcast_pair(const Bound& b, size_t i, size_t j) {
  Shape s = broadcast_shapes(b.tensor(i).sizes(), b.tensor(j).sizes());
  return {aten_t(b.mode(), "aten::expand", {b[i], Value::int_list(s)}),
          aten_t(b.mode(), "aten::expand", {b[j], Value::int_list(s)})};
}

// mean / sum / none of a weighted elementwise loss (the weight= path of l1/mse/huber).
ValueList weighted(const Bound& b, Tensor loss, const Value& weight, int64_t reduction) {
  Mode m = b.mode();
  loss = aten_t(m, "aten::mul.Tensor", {loss, weight});
  if (reduction == 0) return ValueList{loss};
  return aten(m, reduction == 1 ? "aten::mean" : "aten::sum", {loss});
}

void classification(Table& t) {
  t.def_in(kF, "cross_entropy", PyKind::PyFunction,
           {{"(Tensor input, Tensor target, Tensor? weight=None, Any size_average=None, int ignore_index=-100, "
             "Any reduce=None, str reduction=\"mean\", float label_smoothing=0.0)", [](const Bound& b) {
              int64_t r = reduction_enum(b[3], b[5], b.str(6));
              return aten(b.mode(), "aten::cross_entropy_loss", {b[0], b[1], b[2], r, b[4], b[7]});
            }}});
  t.def_in(kF, "nll_loss", PyKind::PyFunction,
           {{"(Tensor input, Tensor target, Tensor? weight=None, Any size_average=None, int ignore_index=-100, "
             "Any reduce=None, str reduction=\"mean\")", [](const Bound& b) {
              int64_t r = reduction_enum(b[3], b[5], b.str(6));
              return aten(b.mode(), "aten::nll_loss_nd", {b[0], b[1], b[2], r, b[4]});
            }}});
  t.def_in(kF, "binary_cross_entropy", PyKind::PyFunction,
           {{"(Tensor input, Tensor target, Tensor? weight=None, Any size_average=None, Any reduce=None, "
             "str reduction=\"mean\")", [](const Bound& b) {
              int64_t r = reduction_enum(b[3], b[4], b.str(5));
              const Tensor &x = b.tensor(0), &y = b.tensor(1);
              KILN_USER_CHECK(x.sizes() == y.sizes(), "Using a target size (", shape_text(y.sizes()),
                              ") that is different to the input size (", shape_text(x.sizes()),
                              ") is deprecated. Please ensure they have the same size.");
              Value w = b[2];
              if (!w.is_none())
                w = aten_t(b.mode(), "aten::expand", {w, Value::int_list(broadcast_shapes(y.sizes(), w.to_tensor().sizes()))});
              return aten(b.mode(), "aten::binary_cross_entropy", {b[0], b[1], w, r});
            }}});
  t.def_in(kF, "binary_cross_entropy_with_logits", PyKind::PyFunction,
           {{"(Tensor input, Tensor target, Tensor? weight=None, Any size_average=None, Any reduce=None, "
             "str reduction=\"mean\", Tensor? pos_weight=None)", [](const Bound& b) {
              int64_t r = reduction_enum(b[3], b[4], b.str(5));
              const Tensor &x = b.tensor(0), &y = b.tensor(1);
              KILN_USER_CHECK(x.sizes() == y.sizes(), "Target size (", shape_text(y.sizes()),
                              ") must be the same as input size (", shape_text(x.sizes()), ")");
              return aten(b.mode(), "aten::binary_cross_entropy_with_logits", {b[0], b[1], b[2], b[6], r});
            }}});
  t.def_in(kF, "kl_div", PyKind::PyFunction,
           {{"(Tensor input, Tensor target, Any size_average=None, Any reduce=None, str reduction=\"mean\", "
             "bool log_target=False)", [](const Bound& b) {
              Mode m = b.mode();
              if (b.str(4) == "batchmean" && b.is_none(2) && b.is_none(3)) {
                Tensor sum = aten_t(m, "aten::kl_div", {b[0], b[1], 2}, {{"log_target", b[5]}});
                if (b.tensor(0).dim() == 0) return ValueList{sum};
                return aten(m, "aten::div.Scalar", {sum, b.tensor(0).size(0)});
              }
              return aten(m, "aten::kl_div", {b[0], b[1], reduction_enum(b[2], b[3], b.str(4))}, {{"log_target", b[5]}});
            }}});
}

void regression(Table& t) {
  t.def_in(kF, "mse_loss", PyKind::PyFunction,
           {{"(Tensor input, Tensor target, Any size_average=None, Any reduce=None, str reduction=\"mean\", "
             "Tensor? weight=None)", [](const Bound& b) {
              int64_t r = reduction_enum(b[2], b[3], b.str(4));
              auto [x, y] = broadcast_pair(b, 0, 1);
              if (!b.is_none(5)) {
                Tensor d = aten_t(b.mode(), "aten::sub.Tensor", {x, y});
                return weighted(b, aten_t(b.mode(), "aten::mul.Tensor", {d, d}), b[5], r);
              }
              return aten(b.mode(), "aten::mse_loss", {x, y, r});
            }}});
  t.def_in(kF, "l1_loss", PyKind::PyFunction,
           {{"(Tensor input, Tensor target, Any size_average=None, Any reduce=None, str reduction=\"mean\", "
             "Tensor? weight=None)", [](const Bound& b) {
              int64_t r = reduction_enum(b[2], b[3], b.str(4));
              auto [x, y] = broadcast_pair(b, 0, 1);
              if (!b.is_none(5))
                return weighted(b, aten_t(b.mode(), "aten::abs", {aten_t(b.mode(), "aten::sub.Tensor", {x, y})}), b[5], r);
              return aten(b.mode(), "aten::l1_loss", {x, y, r});
            }}});
  t.def_in(kF, "smooth_l1_loss", PyKind::PyFunction,
           {{"(Tensor input, Tensor target, Any size_average=None, Any reduce=None, str reduction=\"mean\", "
             "float beta=1.0)", [](const Bound& b) {
              int64_t r = reduction_enum(b[2], b[3], b.str(4));
              auto [x, y] = broadcast_pair(b, 0, 1);
              if (b.real(5) == 0) return aten(b.mode(), "aten::l1_loss", {x, y, r});
              return aten(b.mode(), "aten::smooth_l1_loss", {x, y, r, b[5]});
            }}});
  t.def_in(kF, "huber_loss", PyKind::PyFunction,
           {{"(Tensor input, Tensor target, str reduction=\"mean\", float delta=1.0, Tensor? weight=None)",
             [](const Bound& b) {
               int64_t r = reduction_enum(Value(), Value(), b.str(2));
               auto [x, y] = broadcast_pair(b, 0, 1);
               if (!b.is_none(4)) {
                 Tensor none = aten_t(b.mode(), "aten::huber_loss", {x, y, 0, b[3]});
                 return weighted(b, none, b[4], r);
               }
               return aten(b.mode(), "aten::huber_loss", {x, y, r, b[3]});
             }}});
}

}  // namespace

void register_nn_losses(Table& t) {
  classification(t);
  regression(t);
}

}  // namespace kiln::torchapi::detail
