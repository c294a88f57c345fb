// The workbench's "Ranks and timeline" panel: for each dump, its rank
// comparison and the spans of its chromium events, computed once on their
// own worker (a thousand rank files take a moment) and shown whenever one of
// the dump's compiles is.
#include <QPlainTextEdit>
#include <QTreeView>

#include "core/trace/trace.h"
#include "viewer/job_runner.h"
#include "viewer/session_model.h"
#include "viewer/trace_panel.h"
#include "viewer/workbench.h"

namespace kiln::viewer {

struct TraceViews {
  trace::RankReport report;
  std::vector<trace::TimelineSpan> spans;
};

QWidget* Workbench::buildTracePanel() {
  trace_panel_ = new TracePanel(this);
  connect(trace_panel_, &TracePanel::compileRequested, this, [this](const QString& label) {
    if (trace_views_session_ < 0 || trace_views_session_ >= model_->sessionCount()) return;
    const Session& s = *model_->session(trace_views_session_);
    const std::string id = label.toStdString();
    for (int i = 0; i < int(s.compiles.size()); ++i)
      if (s.compiles[size_t(i)].id == id) {
        showCompile(trace_views_session_, i);
        const QModelIndex row = model_->compileIndex(trace_views_session_, i);
        tree_->scrollTo(row);
        tree_->setCurrentIndex(row);
        return;
      }
    log_->appendPlainText("no compile " + label + " in the session tree (Kiln lists compiles with a graph or a break)");
  });
  return trace_panel_;
}

void Workbench::loadTraceViews(const std::shared_ptr<const Session>& s) {
  std::shared_ptr<const trace::Trace> t = s->trace;
  const std::string path = s->path;
  trace_runner_->post(QString::fromStdString("trace-views:" + path), [this, t, path](JobContext& ctx) -> JobRunner::Done {
    auto views = std::make_shared<TraceViews>();
    views->report = trace::rank_report(*t);
    if (ctx.cancelled()) return {};
    views->spans = trace::timeline_spans(*t);
    return [this, views, path] {
      trace_views_[path] = views;
      // Shown now if its session is the one on screen (or the only one).
      if (session_ >= 0 && session_ < model_->sessionCount() && model_->session(session_)->path == path) showTraceViews(session_);
    };
  });
}

void Workbench::showTraceViews(int session) {
  trace_views_session_ = session;
  if (session < 0 || session >= model_->sessionCount()) return;
  const Session& s = *model_->session(session);
  if (s.kind != Session::Kind::Trace) {
    trace_panel_->clearViews("A Kiln program: it has one process and no chromium events. Open a TORCH_TRACE log or folder.");
    return;
  }
  auto it = trace_views_.find(s.path);
  if (it == trace_views_.end()) {
    trace_panel_->clearViews("Comparing the ranks...");
    return;
  }
  trace_panel_->setViews(it->second->report, it->second->spans);
}

}  // namespace kiln::viewer
