#include "viewer/guard_models.h"

#include <QColor>
#include <QStringList>

#include <algorithm>
#include <cmath>

#include "core/tensor/dtype.h"
#include "viewer/session_model.h"

namespace kiln::viewer {

void GuardModel::setGuards(std::vector<SessionGuard> guards) {
  beginResetModel();
  guards_ = std::move(guards);
  failed_ = -1;
  endResetModel();
}

void GuardModel::setFailedRow(int row) {
  int old = failed_;
  failed_ = row;
  for (int r : {old, row})
    if (r >= 0 && r < rowCount()) emit dataChanged(index(r, 0), index(r, ColumnCount - 1));
}

int GuardModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(guards_.size()); }
int GuardModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant GuardModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const SessionGuard& g = guards_[size_t(index.row())];
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Kind: return QString::fromStdString(g.kind);
      case Guard: return QString::fromStdString(g.text);
      case Line: return g.line > 0 ? QVariant(g.line) : QVariant();
    }
  }
  if (role == Qt::ToolTipRole) {
    QString tip = QString::fromStdString(g.text);
    if (g.line > 0) tip += QString("\nmade by %1:%2").arg(QString::fromStdString(g.file)).arg(g.line);
    return tip;
  }
  if (role == Qt::BackgroundRole && index.row() == failed_) return QColor(255, 205, 205);
  return {};
}

QVariant GuardModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"Kind", "Guard", "Line"};
  return section >= 0 && section < ColumnCount ? QString(names[section]) : QVariant();
}

void RecompileModel::setSession(std::shared_ptr<const Session> s) {
  beginResetModel();
  session_ = std::move(s);
  rows_.clear();
  if (session_)
    for (int i = 0; i < int(session_->compiles.size()); ++i) rows_.push_back(i);
  endResetModel();
}

int RecompileModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(rows_.size()); }
int RecompileModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant RecompileModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const SessionCompile& c = session_->compiles[size_t(rows_[size_t(index.row())])];
  std::string reasons;
  for (const std::string& r : c.recompile_reasons) reasons += (reasons.empty() ? "" : "\n") + r;
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Id: return QString::fromStdString(c.id);
      case Function: return QString::fromStdString(c.function);
      case Status: return QString(compile_status_name(c.status));
      case Reason: {
        if (!reasons.empty()) return QString::fromStdString(reasons.substr(0, reasons.find('\n')));
        if (!c.breaks.empty()) return "graph break: " + QString::fromStdString(c.breaks.front().reason);
        return c.id.find('/') != std::string::npos && c.id.substr(c.id.find('/') + 1, 1) == "0" ? "first compile" : "";
      }
    }
  }
  if (role == Qt::ToolTipRole && index.column() == Reason && !reasons.empty()) return QString::fromStdString(reasons);
  if (role == Qt::ForegroundRole && index.column() == Status) return SessionModel::statusColor(c.status);
  return {};
}

QVariant RecompileModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"Compile", "Function", "Status", "Why it compiled"};
  return section >= 0 && section < ColumnCount ? QString(names[section]) : QVariant();
}

std::optional<std::vector<int64_t>> parse_shape(const std::string& text) {
  QString t = QString::fromStdString(text).trimmed();
  if (t.startsWith('[') || t.startsWith('(')) t = t.mid(1);
  if (t.endsWith(']') || t.endsWith(')')) t.chop(1);
  std::vector<int64_t> out;
  if (t.trimmed().isEmpty()) return out;
  for (const QString& part : t.split(',', Qt::SkipEmptyParts)) {
    bool ok = false;
    qlonglong v = part.trimmed().toLongLong(&ok);
    if (!ok || v < 0) return std::nullopt;
    out.push_back(v);
  }
  return out;
}

namespace {

std::string c10_name(const std::string& torch_name) {
  static const std::pair<const char*, const char*> names[] = {
      {"float32", "Float"}, {"float64", "Double"}, {"float16", "Half"}, {"bfloat16", "BFloat16"},
      {"int64", "Long"},    {"int32", "Int"},      {"int16", "Short"},  {"int8", "Char"},
      {"uint8", "Byte"},    {"bool", "Bool"}};
  for (const auto& [t, c] : names)
    if (torch_name == t) return c;
  return torch_name;
}

std::string short_source(const std::string& s) {
  // L['x'] -> x, as Dynamo's messages name a frame local.
  if (s.size() > 5 && s.starts_with("L['") && s.ends_with("']") && s.find('[', 2) == std::string::npos) return s.substr(3, s.size() - 5);
  return s;
}

// A frame local itself (L['n']), not a parameter or an attribute of one: what a caller passes.
bool frame_local(const std::string& source) {
  return source.size() > 5 && source.starts_with("L['") && source.ends_with("']") && source.find('[', 2) == std::string::npos;
}

std::string trimmed(std::string s) {
  while (!s.empty() && s.front() == ' ') s.erase(0, 1);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// EQUALS_MATCH: "L['n'] == 2" (Kiln and PyTorch write it alike); false for any other form.
bool equals_guard(const SessionGuard& g, std::string* source, std::string* value) {
  if (g.kind != "EQUALS_MATCH") return false;
  const size_t eq = g.text.find(" == ");
  if (eq == std::string::npos) return false;
  *source = g.source.empty() ? trimmed(g.text.substr(0, eq)) : g.source;
  *value = trimmed(g.text.substr(eq + 4));
  return !source->empty() && !value->empty();
}

// TYPE_MATCH: "___check_type_id(L['n'], 10731296), type=<class 'int'>" (PyTorch)
// or "___check_type_id(L['n']), type=<class 'int'>" (Kiln).
bool type_guard(const SessionGuard& g, std::string* source, std::string* type) {
  if (g.kind != "TYPE_MATCH") return false;
  const std::string open = "___check_type_id(";
  const size_t at = g.text.find(open);
  const size_t cls = g.text.find("<class '");
  if (at == std::string::npos || cls == std::string::npos) return false;
  const size_t end = g.text.find_first_of(",)", at + open.size());
  *source = g.source.empty() ? trimmed(g.text.substr(at + open.size(), end - at - open.size())) : g.source;
  *type = g.text.substr(cls + 8, g.text.find('\'', cls + 8) - cls - 8);
  if (size_t dot = type->rfind('.'); dot != std::string::npos) *type = type->substr(dot + 1);  // "builtins.int"
  return !source->empty() && !type->empty();
}

// Two literals of one type with one value (2 == 2.0 is not: Dynamo checks the type too).
bool same_literal(const std::string& a, const std::string& b) {
  const std::string ta = literal_type(a), tb = literal_type(b);
  if (ta.empty() || ta != tb) return a == b;
  if (ta == "int") return std::stoll(a) == std::stoll(b);
  if (ta == "float") return std::stod(a) == std::stod(b) || (std::isnan(std::stod(a)) && std::isnan(std::stod(b)));
  if (ta == "str") return a.substr(1, a.size() - 2) == b.substr(1, b.size() - 2);
  return a == b;
}

}  // namespace

std::string literal_type(const std::string& text) {
  const std::string t = trimmed(text);
  if (t == "True" || t == "False") return "bool";
  if (t == "None") return "NoneType";
  if (t.size() >= 2 && (t.front() == '\'' || t.front() == '"') && t.back() == t.front()) return "str";
  if (t == "inf" || t == "-inf" || t == "nan" || t == "float('inf')" || t == "float('-inf')" || t == "float('nan')") return "float";
  size_t used = 0;
  try {
    (void)std::stoll(t, &used);
    if (used == t.size()) return "int";
  } catch (const std::exception&) {
  }
  try {
    (void)std::stod(t, &used);
    if (used == t.size()) return "float";
  } catch (const std::exception&) {
  }
  return "";
}

int first_failing_guard(const std::vector<SessionGuard>& guards, const std::vector<SignatureInput>& inputs,
                        std::string* why) {
  auto input = [&](const std::string& source, bool scalar) -> const SignatureInput* {
    for (const SignatureInput& s : inputs)
      if (s.source == source && s.scalar == scalar) return &s;
    return nullptr;
  };
  for (int i = 0; i < int(guards.size()); ++i) {
    const SessionGuard& g = guards[size_t(i)];
    std::string source, expected;
    if (equals_guard(g, &source, &expected)) {
      const SignatureInput* in = input(source, true);
      if (!in || same_literal(in->value, expected)) continue;
      if (why) *why = short_source(source) + (expected == "None" ? " is None" : " == " + expected);
      return i;
    }
    if (type_guard(g, &source, &expected)) {
      const SignatureInput* in = input(source, true);
      if (!in || literal_type(in->value) == expected) continue;
      if (why) *why = "___check_type_id(" + short_source(source) + ", ID), type=<class '" + expected + "'> (actual " + literal_type(in->value) + ")";
      return i;
    }
    if (g.kind != "TENSOR_MATCH" || g.source.empty()) continue;
    const SignatureInput* in = input(g.source, false);
    if (!in) continue;
    std::string name = "tensor '" + short_source(g.source) + "'";
    if (in->dtype != g.dtype) {
      if (why) *why = name + " dtype mismatch. expected " + c10_name(g.dtype) + ", actual " + c10_name(in->dtype);
      return i;
    }
    if (in->sizes.size() != g.sizes.size()) {
      if (why)
        *why = name + " rank mismatch. expected " + std::to_string(g.sizes.size()) + ", actual " + std::to_string(in->sizes.size());
      return i;
    }
    for (size_t d = 0; d < g.sizes.size(); ++d) {
      bool dynamic = d < g.dynamic.size() && g.dynamic[d];
      if (!dynamic && in->sizes[d] != g.sizes[d]) {
        if (why)
          *why = name + " size mismatch at index " + std::to_string(d) + ". expected " + std::to_string(g.sizes[d]) +
                 ", actual " + std::to_string(in->sizes[d]);
        return i;
      }
    }
  }
  if (why) why->clear();
  return -1;
}

std::vector<SignatureInput> signature_of(const SessionCompile& c) {
  std::vector<SignatureInput> out;
  for (const SessionGuard& g : c.guards) {
    if (g.kind != "TENSOR_MATCH" || g.source.empty()) continue;
    // Parameters (L['self']._modules...) are not what a caller passes.
    if (g.source.find("._") != std::string::npos || g.source.find("]._") != std::string::npos) continue;
    SignatureInput in{g.source, g.dtype, g.sizes};
    // A dynamic size: the call's, when the dump says it.
    for (size_t d = 0; d < in.sizes.size() && d < g.dynamic.size(); ++d)
      if (g.dynamic[d])
        if (auto v = c.input_values.find(g.source + ".size()[" + std::to_string(d) + "]"); v != c.input_values.end())
          in.sizes[d] = std::atoll(v->second.c_str());
    out.push_back(std::move(in));
  }
  auto add_scalar = [&](const std::string& source, const std::string& value) {
    if (!frame_local(source) || literal_type(value).empty()) return;
    if (std::any_of(out.begin(), out.end(), [&](const SignatureInput& in) { return in.source == source; })) return;
    SignatureInput in;
    in.source = source;
    in.scalar = true;
    in.value = value;
    in.dtype = literal_type(value);
    out.push_back(std::move(in));
  };
  for (const SessionGuard& g : c.guards) {
    std::string source, value;
    if (equals_guard(g, &source, &value)) add_scalar(source, value);
  }
  // A scalar the compile made dynamic has only a TYPE_MATCH: its value is the one the call had.
  for (const SessionGuard& g : c.guards) {
    std::string source, type;
    if (!type_guard(g, &source, &type)) continue;
    auto it = c.input_values.find(source);
    if (it == c.input_values.end()) continue;
    // create_symbol writes a float without its point when it is whole ("3"): as Python would, "3.0".
    std::string value = it->second;
    if (type == "float" && literal_type(value) == "int") value += ".0";
    if (literal_type(value) == type) add_scalar(source, value);
  }
  return out;
}

void SignatureModel::setInputs(std::vector<SignatureInput> inputs) {
  beginResetModel();
  inputs_ = std::move(inputs);
  endResetModel();
}

int SignatureModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(inputs_.size()); }
int SignatureModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant SignatureModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const SignatureInput& s = inputs_[size_t(index.row())];
  if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
  switch (index.column()) {
    case Input: return QString::fromStdString(s.source);
    case DType: return QString::fromStdString(s.dtype);
    case Shape: {
      if (s.scalar) return QString::fromStdString(s.value);
      QStringList parts;
      for (int64_t v : s.sizes) parts << QString::number(v);
      return parts.join(", ");
    }
  }
  return {};
}

bool SignatureModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!index.isValid() || role != Qt::EditRole || index.row() >= rowCount()) return false;
  SignatureInput& s = inputs_[size_t(index.row())];
  std::string text = value.toString().trimmed().toStdString();
  if (s.scalar) {
    // A scalar's type is its value's: 3 is an int, 3.0 a float.
    if (index.column() != Shape || literal_type(text).empty()) return false;
    s.value = text;
    s.dtype = literal_type(text);
    emit dataChanged(this->index(index.row(), DType), index);
    emit signatureEdited();
    return true;
  }
  if (index.column() == DType) {
    if (!dtype_from_name(text)) return false;
    s.dtype = text;
  } else if (index.column() == Shape) {
    auto shape = parse_shape(text);
    if (!shape) return false;
    s.sizes = *shape;
  } else {
    return false;
  }
  emit dataChanged(index, index);
  emit signatureEdited();
  return true;
}

Qt::ItemFlags SignatureModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
  const bool scalar = index.row() < rowCount() && inputs_[size_t(index.row())].scalar;
  if (index.column() == Shape || (index.column() == DType && !scalar)) f |= Qt::ItemIsEditable;
  return f;
}

QVariant SignatureModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"Input", "dtype / type", "Shape / value"};
  return section >= 0 && section < ColumnCount ? QString(names[section]) : QVariant();
}

}  // namespace kiln::viewer
