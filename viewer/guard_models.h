#pragma once
// The guards and recompiles panel's models: the guards of one compiled entry,
// the recompile timeline of a session, and an editable input signature
// (dtype and shape per guarded tensor, value per guarded scalar) checked
// against every cache entry of a frame, to show which guard a call with that
// signature would fail.
#include <QAbstractTableModel>

#include <optional>
#include <string>
#include <vector>

#include "session/session.h"
#include "viewer/session_names.h"

namespace kiln::viewer {

class GuardModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Kind, Guard, Line, ColumnCount };
  using QAbstractTableModel::QAbstractTableModel;
  void setGuards(std::vector<SessionGuard> guards);
  // The row whose guard failed in the last signature check, highlighted; -1 none.
  void setFailedRow(int row);
  const SessionGuard& guard(int row) const { return guards_[size_t(row)]; }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<SessionGuard> guards_;
  int failed_ = -1;
};

// One row per compile in session order: when it happened, and why the cache missed.
class RecompileModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Id, Function, Status, Reason, ColumnCount };
  using QAbstractTableModel::QAbstractTableModel;
  void setSession(std::shared_ptr<const Session> s);
  int compileAt(int row) const { return rows_[size_t(row)]; }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const Session> session_;
  std::vector<int> rows_;
};

struct SignatureInput {
  std::string source;  // "L['x']"
  std::string dtype;   // "float32"; a scalar's Python type: "float", "int", "bool", "str", "NoneType"
  std::vector<int64_t> sizes;
  // A Python scalar the frame's EQUALS_MATCH guards compare (a float
  // constant, a loop count): its value as Python writes it ("2.0", "3", "True").
  bool scalar = false;
  std::string value;
};

// A Python literal's type ("float", "int", "bool", "str", "NoneType"); empty
// when `text` is not a literal the signature check compares.
std::string literal_type(const std::string& text);

// Parses "8, 16" / "[8, 16]" / "(8,16)"; nullopt when it is not a shape.
std::optional<std::vector<int64_t>> parse_shape(const std::string& text);

// The first guard of `guards` that `inputs` fail, with Dynamo's wording
// ("tensor 'x' size mismatch at index 0. expected 8, actual 12", "scale ==
// 2.0"): TENSOR_MATCH on tensors, EQUALS_MATCH and TYPE_MATCH on scalars; -1
// when they all pass. Guards on values not in `inputs` (parameters, globals,
// object identities) are assumed to hold.
int first_failing_guard(const std::vector<SessionGuard>& guards, const std::vector<SignatureInput>& inputs,
                        std::string* why);

// The frame's inputs as the compile's guards describe them (frame locals
// only): tensors from TENSOR_MATCH, then scalars from EQUALS_MATCH.
std::vector<SignatureInput> signature_of(const SessionCompile& c);

class SignatureModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Input, DType, Shape, ColumnCount };  // Shape holds a scalar's value
  using QAbstractTableModel::QAbstractTableModel;
  void setInputs(std::vector<SignatureInput> inputs);
  const std::vector<SignatureInput>& inputs() const { return inputs_; }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 signals:
  void signatureEdited();

 private:
  std::vector<SignatureInput> inputs_;
};

}  // namespace kiln::viewer
