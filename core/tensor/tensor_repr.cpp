// A port of torch/_tensor_str.py (PyTorch 2.11): _Formatter, _tensor_str,
// get_summarized_data, _add_suffixes and _str_intern, for strided dense
// tensors, and complex ones given as their view_as_real (no sparse, quantized
// or named tensors in Kiln). Function
// names follow PyTorch's so the two read side by side.
//
// PyTorch formats every element as a Python float or int (tolist()/item()),
// so float16, bfloat16 and float32 values are widened exactly to double and
// then formatted by Python's rules; py_format_float does the same here.
#include "core/tensor/tensor_repr.h"

#include <algorithm>
#include <cmath>

#include "core/util/pyformat.h"

namespace kiln {
namespace {

// Reads elements by their row-major index through the tensor's own strides,
// so a summarized print touches only the edges it shows.
class Elements {
 public:
  explicit Elements(const Tensor& t)
      : t_(t), sizes_(t.sizes()), row_major_strides_(contiguous_strides(t.sizes())) {}

  bool floating() const { return is_floating(t_.dtype()); }
  bool is_bool() const { return t_.dtype() == DType::Bool; }
  const Shape& sizes() const { return sizes_; }
  const Shape& row_major_strides() const { return row_major_strides_; }

  // Floating dtypes widen exactly to double, as Python's float does.
  double as_double(int64_t index) const {
    return dispatch_all(t_.dtype(), [&]<class T>() { return double(static_cast<acc_t<T>>(at<T>(index))); });
  }
  int64_t as_int(int64_t index) const {
    return dispatch_all(t_.dtype(), [&]<class T>() { return int64_t(static_cast<acc_t<T>>(at<T>(index))); });
  }

 private:
  template <class T>
  T at(int64_t index) const {
    int64_t offset = 0;
    for (size_t d = sizes_.size(); d-- > 0;) {
      offset += index % sizes_[d] * t_.strides()[d];
      index /= sizes_[d];
    }
    return t_.data<T>()[offset];
  }

  const Tensor& t_;
  Shape sizes_, row_major_strides_;
};

std::string must(Expected<std::string> text) {
  KILN_CHECK(text.ok(), text.status().message());
  return std::move(*text);
}

// What Printer asks of a formatter: the element text, padded to width().
class ElementText {
 public:
  virtual ~ElementText() = default;
  virtual int64_t width() const = 0;
  virtual std::string format(int64_t k) const = 0;
};

class Formatter final : public ElementText {
 public:
  // `sample` holds the element indices PyTorch's _Formatter sees: the whole
  // tensor, or get_summarized_data's edges when it is summarized.
  Formatter(const Elements& e, const std::vector<int64_t>& sample, const TensorReprOptions& opts)
      : e_(e), precision_(opts.precision) {
    if (!e.floating()) {
      for (int64_t k : sample) max_width_ = std::max(max_width_, int64_t(int_text(k).size()));
      return;
    }
    std::vector<double> nonzero_finite;
    for (int64_t k : sample) {
      double v = e.as_double(k);
      if (std::isfinite(v) && v != 0) nonzero_finite.push_back(v);
    }
    // With no such value PyTorch returns before looking at opts.sci_mode.
    if (nonzero_finite.empty()) return;

    double min_abs = INFINITY, max_abs = 0;
    for (double v : nonzero_finite) {
      min_abs = std::min(min_abs, std::fabs(v));
      max_abs = std::max(max_abs, std::fabs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    sci_mode_ = opts.sci_mode ? *opts.sci_mode
                              : (max_abs / min_abs > 1000.0 || max_abs > 1.0e8 || min_abs < 1.0e-4);
    for (double v : nonzero_finite) {
      int64_t width;
      if (sci_mode_) width = int64_t(must(py_format_float(v, exp_spec(0))).size());
      else if (int_mode_) width = int64_t(must(py_format_float(v, ".0f")).size()) + 1;
      else width = int64_t(must(py_format_float(v, fixed_spec())).size());
      max_width_ = std::max(max_width_, width);
    }
  }

  int64_t width() const override { return max_width_; }

  std::string format(int64_t k) const override {
    std::string text;
    if (!e_.floating()) {
      text = int_text(k);
    } else {
      double v = e_.as_double(k);
      if (sci_mode_) {
        text = must(py_format_float(v, exp_spec(max_width_)));
      } else if (int_mode_) {
        text = must(py_format_float(v, ".0f"));
        if (std::isfinite(v)) text += '.';
      } else {
        text = must(py_format_float(v, fixed_spec()));
      }
    }
    int64_t pad = max_width_ - int64_t(text.size());
    return pad > 0 ? std::string(size_t(pad), ' ') + text : text;
  }

 private:
  std::string int_text(int64_t k) const {
    int64_t v = e_.as_int(k);
    if (e_.is_bool()) return v ? "True" : "False";
    return std::to_string(v);
  }
  std::string fixed_spec() const { return "." + std::to_string(precision_) + "f"; }
  std::string exp_spec(int64_t width) const {
    return (width > 0 ? std::to_string(width) : std::string()) + "." + std::to_string(precision_) + "e";
  }

  const Elements& e_;
  int precision_;
  bool int_mode_ = true;
  bool sci_mode_ = false;
  int64_t max_width_ = 1;
};

class Printer {
 public:
  Printer(const Elements& e, const TensorReprOptions& opts, bool summarize)
      : e_(e), opts_(opts), summarize_(summarize) {}

  // get_summarized_data, as the element indices it keeps.
  void summarized_sample(int64_t dim, int64_t first, std::vector<int64_t>& out) const {
    int64_t ndim = int64_t(e_.sizes().size());
    if (dim == ndim) {
      out.push_back(first);
      return;
    }
    int64_t n = e_.sizes()[size_t(dim)], stride = e_.row_major_strides()[size_t(dim)];
    int64_t edge = opts_.edgeitems;
    if (dim + 1 == ndim) {
      for (int64_t k : kept_rows(n)) out.push_back(first + k * stride);
      return;
    }
    if (edge == 0) return;  // PyTorch returns an empty tensor here
    for (int64_t k : kept_rows(n)) summarized_sample(dim + 1, first + k * stride, out);
  }

  void set_formatter(const ElementText* f) { formatter_ = f; }

  // _tensor_str_with_formatter for the sub-tensor of dims [dim, ndim) whose
  // first element has row-major index `first`.
  std::string tensor_str(int64_t dim, int64_t first, int64_t indent) const {
    int64_t ndim = int64_t(e_.sizes().size());
    if (dim == ndim) return formatter_->format(first);
    if (dim + 1 == ndim) return vector_str(first, indent);
    int64_t n = e_.sizes()[size_t(dim)], stride = e_.row_major_strides()[size_t(dim)];
    int64_t edge = opts_.edgeitems;
    std::vector<std::string> slices;
    if (summarize_ && n > 2 * edge) {
      for (int64_t k = 0; k < edge; ++k) slices.push_back(tensor_str(dim + 1, first + k * stride, indent + 1));
      slices.push_back("...");
      for (int64_t k = n - edge; k < n; ++k) slices.push_back(tensor_str(dim + 1, first + k * stride, indent + 1));
    } else {
      for (int64_t k = 0; k < n; ++k) slices.push_back(tensor_str(dim + 1, first + k * stride, indent + 1));
    }
    std::string sep = "," + std::string(size_t(ndim - dim - 1), '\n') + std::string(size_t(indent + 1), ' ');
    return "[" + join(slices, sep) + "]";
  }

 private:
  // The rows a summarized dim keeps: the first and last edgeitems.
  std::vector<int64_t> kept_rows(int64_t n) const {
    std::vector<int64_t> rows;
    int64_t edge = opts_.edgeitems;
    if (n > 2 * edge) {
      for (int64_t k = 0; k < edge; ++k) rows.push_back(k);
      for (int64_t k = n - edge; k < n; ++k) rows.push_back(k);
    } else {
      for (int64_t k = 0; k < n; ++k) rows.push_back(k);
    }
    return rows;
  }

  // _vector_str: one line per elements_per_line items, wrapped under the '['.
  std::string vector_str(int64_t first, int64_t indent) const {
    int64_t n = e_.sizes().back(), stride = e_.row_major_strides().back();
    int64_t element_length = formatter_->width() + 2;
    int64_t per_line = std::max<int64_t>(
        1, int64_t(std::floor(double(opts_.linewidth - indent) / double(element_length))));
    std::vector<std::string> data;
    int64_t edge = opts_.edgeitems;
    if (summarize_ && edge == 0) {
      data.push_back("...");
    } else if (summarize_ && n > 2 * edge) {
      for (int64_t k = 0; k < edge; ++k) data.push_back(formatter_->format(first + k * stride));
      data.push_back(" ...");
      for (int64_t k = n - edge; k < n; ++k) data.push_back(formatter_->format(first + k * stride));
    } else {
      for (int64_t k = 0; k < n; ++k) data.push_back(formatter_->format(first + k * stride));
    }
    std::vector<std::string> lines;
    for (size_t start = 0; start < data.size(); start += size_t(per_line)) {
      std::vector<std::string> line(data.begin() + ptrdiff_t(start),
                                    data.begin() + ptrdiff_t(std::min(data.size(), start + size_t(per_line))));
      lines.push_back(join(line, ", "));
    }
    return "[" + join(lines, ",\n" + std::string(size_t(indent + 1), ' ')) + "]";
  }

  static std::string join(const std::vector<std::string>& parts, const std::string& sep) {
    std::string out;
    for (size_t k = 0; k < parts.size(); ++k) {
      if (k) out += sep;
      out += parts[k];
    }
    return out;
  }

  const Elements& e_;
  const TensorReprOptions& opts_;
  bool summarize_;
  const ElementText* formatter_ = nullptr;
};

// _val_formatter's complex case: the real and imaginary parts each formatted
// by their own _Formatter, joined with the imaginary part's sign. Its width
// counts the 'j', as _vector_str's element_length does.
class ComplexFormatter final : public ElementText {
 public:
  ComplexFormatter(const Formatter& real, const Formatter& imag) : real_(real), imag_(imag) {}
  int64_t width() const override { return real_.width() + imag_.width() + 1; }
  std::string format(int64_t k) const override {
    std::string imag = imag_.format(k) + "j";
    imag.erase(0, imag.find_first_not_of(' '));
    return real_.format(k) + (imag[0] == '+' || imag[0] == '-' ? "" : "+") + imag;
  }

 private:
  const Formatter& real_;
  const Formatter& imag_;
};

// The element indices a _Formatter sees: get_summarized_data's, or all.
std::vector<int64_t> formatter_sample(const Printer& printer, int64_t numel, bool summarize) {
  std::vector<int64_t> sample;
  if (summarize) {
    printer.summarized_sample(0, 0, sample);
  } else {
    sample.resize(size_t(numel));
    for (size_t k = 0; k < sample.size(); ++k) sample[k] = int64_t(k);
  }
  return sample;
}

// _tensor_str for a tensor with elements.
std::string tensor_str(const Tensor& t, int64_t indent, const TensorReprOptions& opts) {
  bool summarize = t.numel() > opts.threshold;
  Elements e(t);
  Printer printer(e, opts, summarize);
  Formatter formatter(e, formatter_sample(printer, t.numel(), summarize), opts);
  printer.set_formatter(&formatter);
  return printer.tensor_str(0, 0, indent);
}

// _tensor_str for a complex tensor, from its real and imaginary parts.
std::string complex_tensor_str(const Tensor& real, const Tensor& imag, int64_t indent, const TensorReprOptions& opts) {
  bool summarize = real.numel() > opts.threshold;
  Elements re(real), im(imag);
  Printer printer(re, opts, summarize);
  const std::vector<int64_t> sample = formatter_sample(printer, real.numel(), summarize);
  Formatter real_formatter(re, sample, opts), imag_formatter(im, sample, opts);
  ComplexFormatter formatter(real_formatter, imag_formatter);
  printer.set_formatter(&formatter);
  return printer.tensor_str(0, 0, indent);
}

// str(tuple(shape)): "(2, 3)", "(5,)", "()".
std::string tuple_repr(const Shape& sizes) {
  std::string out = "(";
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (k) out += ", ";
    out += std::to_string(sizes[k]);
  }
  if (sizes.size() == 1) out += ',';
  return out + ")";
}

// _add_suffixes: ", suffix" on the last line while it fits in linewidth, else
// a new line indented under the '('; force_newline (sparse tensors) starts the
// first suffix on a line of its own.
std::string add_suffixes(const std::string& tensor_str, const std::vector<std::string>& suffixes,
                         int64_t indent, int64_t linewidth, bool force_newline = false) {
  std::string out = tensor_str;
  // PyTorch's arithmetic, including its +1 (and +2 when there is no newline).
  size_t newline = tensor_str.rfind('\n');
  int64_t last_line_len = int64_t(tensor_str.size()) - (newline == std::string::npos ? -1 : int64_t(newline)) + 1;
  for (const std::string& suffix : suffixes) {
    int64_t len = int64_t(suffix.size());
    if (force_newline || last_line_len + len + 2 > linewidth) {
      out += ",\n" + std::string(size_t(indent), ' ') + suffix;
      last_line_len = indent + len;
      force_newline = false;
    } else {
      out += ", " + suffix;
      last_line_len += len + 2;
    }
  }
  return out + ")";
}

}  // namespace

std::string dtype_repr(DType dtype) { return "torch." + std::string(dtype_name(dtype)); }

std::string size_repr(const std::vector<int64_t>& sizes) {
  std::string out = "torch.Size([";
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (k) out += ", ";
    out += std::to_string(sizes[k]);
  }
  return out + "])";
}

std::string sparse_coo_repr(const Tensor& indices, const Tensor& values, const Shape& sizes,
                            const TensorReprExtras& extras, const TensorReprOptions& opts) {
  const std::string prefix = "tensor(";
  const int64_t indent = int64_t(prefix.size());
  std::vector<std::string> suffixes;
  if (!extras.device.empty() && extras.device != "cpu") suffixes.push_back("device='" + extras.device + "'");
  suffixes.push_back("size=" + tuple_repr(sizes));
  suffixes.push_back("nnz=" + std::to_string(values.numel()));
  const DType d = values.dtype();
  if (d != kDefaultFloat && d != DType::Int64 && d != DType::Bool) suffixes.push_back("dtype=" + dtype_repr(d));
  // _str_intern: each part by _tensor_str, an empty one with its size.
  auto part = [&](const char* name, const Tensor& t) {
    const std::string head = std::string(name) + "=tensor(";
    std::string text = t.numel() == 0 ? "[]" : tensor_str(t, indent + int64_t(head.size()), opts);
    if (t.numel() == 0) text += ", size=" + tuple_repr(t.sizes());
    return head + text + ")";
  };
  const std::string body = part("indices", indices) + ",\n" + std::string(size_t(indent), ' ') + part("values", values);
  suffixes.push_back("layout=torch.sparse_coo");
  if (!extras.grad_fn.empty()) suffixes.push_back("grad_fn=<" + extras.grad_fn + ">");
  else if (extras.requires_grad) suffixes.push_back("requires_grad=True");
  return add_suffixes(prefix + body, suffixes, indent, opts.linewidth, /*force_newline=*/true);
}

std::string tensor_repr(const Tensor& t, const TensorReprExtras& extras, const TensorReprOptions& opts) {
  KILN_CHECK(t.defined(), "tensor_repr of an undefined tensor");
  const bool complex = extras.complex_pair;
  if (complex)
    KILN_CHECK(t.dim() >= 1 && t.sizes().back() == 2 && (t.dtype() == DType::Float32 || t.dtype() == DType::Float64),
               "tensor_repr: a complex tensor comes as a float32/float64 pair tensor, got ", t.type_str());
  const Tensor real = complex ? t.select(-1, 0) : t;
  const std::string dtype_text = complex ? (t.dtype() == DType::Float64 ? "torch.complex128" : "torch.complex64")
                                         : dtype_repr(t.dtype());
  // complex64 is the default complex dtype while float32 is the default float.
  const bool default_dtype = t.dtype() == kDefaultFloat;
  const std::string prefix = "tensor(";
  const int64_t indent = int64_t(prefix.size());
  std::vector<std::string> suffixes;

  std::string device = extras.device.empty() && t.is_meta() ? "meta" : extras.device;
  if (!device.empty() && device != "cpu") suffixes.push_back("device='" + device + "'");

  // Printed dtypes are the ones a literal would not infer.
  bool has_default_dtype = default_dtype || (!complex && (t.dtype() == DType::Int64 || t.dtype() == DType::Bool));
  std::string body;
  if (t.is_meta()) {
    suffixes.push_back("size=" + tuple_repr(real.sizes()));
    if (!default_dtype) suffixes.push_back("dtype=" + dtype_text);
    body = "...";
  } else if (real.numel() == 0) {
    if (real.dim() != 1) suffixes.push_back("size=" + tuple_repr(real.sizes()));
    // An empty literal has no elements to infer int64 from (nor complex from).
    if (!default_dtype || complex) suffixes.push_back("dtype=" + dtype_text);
    body = "[]";
  } else {
    if (opts.edgeitems == 0) suffixes.push_back("size=" + tuple_repr(real.sizes()));
    if (!has_default_dtype) suffixes.push_back("dtype=" + dtype_text);
    body = complex ? complex_tensor_str(real, t.select(-1, 1), indent, opts) : tensor_str(t, indent, opts);
  }
  if (!extras.grad_fn.empty()) suffixes.push_back("grad_fn=<" + extras.grad_fn + ">");
  else if (extras.requires_grad) suffixes.push_back("requires_grad=True");

  std::string text = add_suffixes(prefix + body, suffixes, indent, opts.linewidth);
  return extras.is_parameter ? "Parameter containing:\n" + text : text;
}

}  // namespace kiln
