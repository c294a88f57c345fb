#include "viewer/session_model.h"

#include <QFont>

#include <map>

namespace kiln::viewer {

QColor SessionModel::statusColor(CompileStatus s) {
  switch (s) {
    case CompileStatus::Ok: return QColor(60, 160, 80);
    case CompileStatus::GraphBreak: return QColor(220, 140, 20);
    case CompileStatus::Recompile: return QColor(60, 120, 220);
    case CompileStatus::Failed: return QColor(210, 50, 50);
  }
  return Qt::gray;
}

void SessionModel::addItems(int si) {
  const Session& s = *sessions_[size_t(si)];
  auto add = [&](int parent, Ref r) {
    Item it;
    it.parent = parent;
    it.ref = std::move(r);
    int id = int(items_.size());
    std::vector<int>& siblings = parent < 0 ? top_ : items_[size_t(parent)].children;
    it.row = int(siblings.size());
    siblings.push_back(id);
    items_.push_back(std::move(it));
    return id;
  };
  int entry = add(-1, {Level::Entry, si, -1, -1, {}});
  // A multi-rank trace gets a level per rank, so one rank's frames and
  // recompiles read apart from the others'. One pass groups the compiles by
  // rank and frame in first-seen order (a thousand ranks stay cheap).
  struct Frame {
    std::string id;
    std::vector<int> compiles;
  };
  struct Rank {
    std::string name;
    std::vector<Frame> frames;
    std::map<std::string, size_t> frame_at;
  };
  std::vector<Rank> ranks;
  std::map<std::string, size_t> rank_at;
  for (int ci = 0; ci < int(s.compiles.size()); ++ci) {
    const SessionCompile& c = s.compiles[size_t(ci)];
    auto [r, new_rank] = rank_at.emplace(c.rank, ranks.size());
    if (new_rank) ranks.push_back({c.rank, {}, {}});
    Rank& rank = ranks[r->second];
    auto [f, new_frame] = rank.frame_at.emplace(c.frame, rank.frames.size());
    if (new_frame) rank.frames.push_back({c.frame, {}});
    rank.frames[f->second].compiles.push_back(ci);
  }
  const bool by_rank = ranks.size() > 1;
  for (const Rank& rank : ranks) {
    size_t compiles = 0;
    for (const Frame& frame : rank.frames) compiles += frame.compiles.size();
    const int under =
        by_rank ? add(entry, {Level::Rank, si, -1, -1, rank.name.empty() ? std::string("no rank") : rank.name, int(compiles)}) : entry;
    for (const Frame& frame : rank.frames) {
      const int f = add(under, {Level::Frame, si, -1, -1, frame.id});
      for (int ci : frame.compiles) {
        const int cid = add(f, {Level::Compile, si, ci, -1, frame.id});
        for (int st = 0; st < int(s.compiles[size_t(ci)].stages.size()); ++st) add(cid, {Level::Stage, si, ci, st, frame.id});
      }
    }
  }
}

void SessionModel::rebuild() {
  items_.clear();
  top_.clear();
  for (int i = 0; i < int(sessions_.size()); ++i) addItems(i);
}

int SessionModel::addSession(std::shared_ptr<const Session> s) {
  for (int i = 0; i < int(sessions_.size()); ++i)
    if (sessions_[size_t(i)]->path == s->path) {
      beginResetModel();
      sessions_[size_t(i)] = std::move(s);
      rebuild();
      endResetModel();
      return i;
    }
  int row = int(sessions_.size());
  beginInsertRows({}, row, row);
  sessions_.push_back(std::move(s));
  addItems(row);
  endInsertRows();
  return row;
}

void SessionModel::clear() {
  beginResetModel();
  sessions_.clear();
  rebuild();
  endResetModel();
}

const SessionModel::Item* SessionModel::item(const QModelIndex& index) const {
  if (!index.isValid()) return nullptr;
  return &items_[size_t(index.internalId())];
}

QModelIndex SessionModel::index(int row, int column, const QModelIndex& parent) const {
  if (row < 0 || column < 0 || column >= ColumnCount) return {};
  const std::vector<int>& kids = parent.isValid() ? item(parent)->children : top_;
  if (parent.isValid() && parent.column() != 0) return {};
  if (row >= int(kids.size())) return {};
  return createIndex(row, column, quintptr(kids[size_t(row)]));
}

QModelIndex SessionModel::parent(const QModelIndex& child) const {
  const Item* it = item(child);
  if (!it || it->parent < 0) return {};
  const Item& p = items_[size_t(it->parent)];
  return createIndex(p.row, 0, quintptr(it->parent));
}

int SessionModel::rowCount(const QModelIndex& parent) const {
  if (!parent.isValid()) return int(top_.size());
  if (parent.column() != 0) return 0;
  return int(item(parent)->children.size());
}

int SessionModel::columnCount(const QModelIndex&) const { return ColumnCount; }

SessionModel::Ref SessionModel::ref(const QModelIndex& index) const {
  const Item* it = item(index);
  return it ? it->ref : Ref{};
}

QModelIndex SessionModel::compileIndex(int session, int compile) const {
  for (size_t i = 0; i < items_.size(); ++i) {
    const Ref& r = items_[i].ref;
    if (r.level == Level::Compile && r.session == session && r.compile == compile)
      return createIndex(items_[i].row, 0, quintptr(i));
  }
  return {};
}

QModelIndex SessionModel::stageIndex(int session, int compile, int stage) const {
  for (size_t i = 0; i < items_.size(); ++i) {
    const Ref& r = items_[i].ref;
    if (r.level == Level::Stage && r.session == session && r.compile == compile && r.stage == stage)
      return createIndex(items_[i].row, 0, quintptr(i));
  }
  return {};
}

namespace {
QString seconds_text(double s) {
  if (s <= 0) return {};
  return s < 1 ? QString("%1 ms").arg(s * 1e3, 0, 'f', s < 0.01 ? 3 : 1) : QString("%1 s").arg(s, 0, 'f', 2);
}
}  // namespace

QVariant SessionModel::data(const QModelIndex& index, int role) const {
  const Item* it = item(index);
  if (!it) return {};
  const Ref& r = it->ref;
  const Session& s = *sessions_[size_t(r.session)];
  const SessionCompile* c = r.compile >= 0 ? &s.compiles[size_t(r.compile)] : nullptr;
  const SessionStage* st = c && r.stage >= 0 ? &c->stages[size_t(r.stage)] : nullptr;
  int col = index.column();
  switch (role) {
    case Qt::DisplayRole:
      switch (r.level) {
        case Level::Entry:
          if (col == Name) return QString::fromStdString(s.title);
          if (col == Detail) return s.compiles.size() == 1 ? QString("1 compile") : QString("%1 compiles").arg(s.compiles.size());
          if (col == Time) return seconds_text(s.load_seconds);
          return {};
        case Level::Rank: {
          if (col == Name) return QString::fromStdString(r.frame);
          if (col != Detail) return {};
          return r.count == 1 ? QString("1 compile") : QString("%1 compiles").arg(r.count);
        }
        case Level::Frame: {
          // Under its rank, a frame is named without the rank's prefix ("r1:0" -> "0").
          std::string_view frame = r.frame;
          if (size_t colon = frame.find(':'); colon != std::string_view::npos && frame.starts_with("r")) frame.remove_prefix(colon + 1);
          if (col == Name) return QString("frame %1").arg(QString::fromUtf8(frame.data(), int(frame.size())));
          return {};
        }
        case Level::Compile:
          if (col == Name) return QString("[%1] %2").arg(QString::fromStdString(c->id), QString::fromStdString(c->function));
          if (col == Detail) return QString(compile_status_name(c->status));
          if (col == Time) return seconds_text(c->compile_seconds);
          return {};
        case Level::Stage:
          if (col == Name) return QString::fromStdString(st->name);
          if (col == Detail) {
            if (st->kind == StageKind::Code) return QString::fromStdString(st->summary);
            if (!st->changed) return QString("unchanged");
            if (st->nodes >= 0) return QString("%1 nodes, %2 ops").arg(st->nodes).arg(st->ops);
            return {};
          }
          if (col == Time) return seconds_text(st->seconds);
          return {};
      }
      return {};
    case Qt::DecorationRole:
      if (col == Name && r.level == Level::Compile) return statusColor(c->status);
      return {};
    case Qt::ForegroundRole:
      if (r.level == Level::Stage && !st->changed) return QColor(Qt::gray);
      if (r.level == Level::Compile && col == Detail) return statusColor(c->status);
      return {};
    case Qt::ToolTipRole:
      if (r.level == Level::Entry)
        return QString("%1\n%2, %3 compile(s), opened in %4")
            .arg(QString::fromStdString(s.path), s.kind == Session::Kind::Program ? "a Kiln program" : "a PyTorch dump")
            .arg(s.compiles.size())
            .arg(seconds_text(s.load_seconds));
      if (r.level == Level::Compile) {
        // The full name first: the column may have cut its middle.
        QString tip = QString("[%1] %2\n%3:%4")
                          .arg(QString::fromStdString(c->id), QString::fromStdString(c->function), QString::fromStdString(c->file))
                          .arg(c->line);
        if (!c->status_note.empty()) tip += "\n" + QString::fromStdString(c->status_note);
        return tip;
      }
      if (r.level == Level::Stage)
        return QString::fromStdString(st->name) + (st->summary.empty() ? QString() : "\n" + QString::fromStdString(st->summary));
      return {};
    case Qt::FontRole:
      if (r.level == Level::Entry && col == Name) {
        QFont f;
        f.setBold(true);
        return f;
      }
      return {};
    default:
      return {};
  }
}

QVariant SessionModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Name: return QString("Name");
    case Detail: return QString("Status / size");
    case Time: return QString("Time");
  }
  return {};
}

}  // namespace kiln::viewer
