#pragma once
// One worker thread that runs the workbench's long jobs (compiling, indexing,
// parsing graphs, numerics) so the UI thread never waits, in the manner of
// RenderDoc's AsyncInvoke: a job posted with a tag replaces a queued job with
// the same tag that has not started, and asks a running one to stop. A job
// returns what the UI thread should do with its result; that runs through a
// queued call, so views only change on the UI thread.
#include <QObject>
#include <QString>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace kiln::viewer {

struct JobContext {
  const std::atomic<bool>* cancel = nullptr;
  std::function<void(double fraction, const std::string& what)> progress;
  // A cancelled job's result is dropped as stale, unless the job sets this:
  // a cancelled minify run still reports what it reached.
  bool deliver_when_cancelled = false;
  bool cancelled() const { return cancel && cancel->load(); }
};

class JobRunner : public QObject {
  Q_OBJECT
 public:
  using Done = std::function<void()>;
  using Work = std::function<Done(JobContext&)>;

  explicit JobRunner(QObject* parent = nullptr);
  ~JobRunner() override;

  void post(const QString& tag, Work work);
  void cancel(const QString& tag);  // the queued job is dropped, the running one asked to stop
  void cancelAll();
  void stop();                      // cancels everything and joins the thread
  bool isIdle() const;

 signals:
  void jobStarted(const QString& tag);
  void jobProgress(const QString& tag, double fraction, const QString& what);
  void jobFinished(const QString& tag);

 private:
  struct Job {
    QString tag;
    Work work;
    std::shared_ptr<std::atomic<bool>> cancel;
  };
  void loop();

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> queue_;
  QString running_tag_;
  std::shared_ptr<std::atomic<bool>> running_cancel_;
  std::atomic<int> pending_{0};  // queued + running + results not yet delivered
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace kiln::viewer
