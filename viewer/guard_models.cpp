#include "viewer/guard_models.h"

#include <QColor>
#include <QStringList>

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

}  // namespace

int first_failing_guard(const std::vector<SessionGuard>& guards, const std::vector<SignatureInput>& inputs,
                        std::string* why) {
  for (int i = 0; i < int(guards.size()); ++i) {
    const SessionGuard& g = guards[size_t(i)];
    if (g.kind != "TENSOR_MATCH" || g.source.empty()) continue;
    const SignatureInput* in = nullptr;
    for (const SignatureInput& s : inputs)
      if (s.source == g.source) in = &s;
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
    out.push_back({g.source, g.dtype, g.sizes});
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
  if (index.column() != Input) f |= Qt::ItemIsEditable;
  return f;
}

QVariant SignatureModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"Input", "dtype", "Shape"};
  return section >= 0 && section < ColumnCount ? QString(names[section]) : QVariant();
}

}  // namespace kiln::viewer
