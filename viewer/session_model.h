#pragma once
// The session tree: each opened input, its frames, their compile ids (with
// status: ok, graph break, recompile, failed) and each compile's stages.
#include <QAbstractItemModel>
#include <QColor>

#include <memory>
#include <vector>

#include "session/session.h"
#include "viewer/session_names.h"

namespace kiln::viewer {

class SessionModel : public QAbstractItemModel {
  Q_OBJECT
 public:
  enum Column { Name, Detail, Time, ColumnCount };
  enum class Level { Entry, Rank, Frame, Compile, Stage };
  // What a row stands for; compile/stage are -1 above their level.
  struct Ref {
    Level level = Level::Entry;
    int session = -1;
    int compile = -1;
    int stage = -1;
    std::string frame;  // Frame: its id; Rank: the rank ("rank 1")
    int count = 0;      // Rank: its compiles
  };

  using QAbstractItemModel::QAbstractItemModel;

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // Adds an entry; one for the same path is replaced (reopening refreshes it).
  int addSession(std::shared_ptr<const Session> s);
  void clear();
  int sessionCount() const { return int(sessions_.size()); }
  std::shared_ptr<const Session> session(int i) const { return sessions_[size_t(i)]; }

  Ref ref(const QModelIndex& index) const;
  QModelIndex compileIndex(int session, int compile) const;
  QModelIndex stageIndex(int session, int compile, int stage) const;

  static QColor statusColor(CompileStatus s);

 private:
  struct Item {
    int parent = -1;  // -1: top level
    int row = 0;
    Ref ref;
    std::vector<int> children;
  };
  void rebuild();
  void addItems(int session);
  const Item* item(const QModelIndex& index) const;

  std::vector<std::shared_ptr<const Session>> sessions_;
  std::vector<Item> items_;
  std::vector<int> top_;
};

}  // namespace kiln::viewer
