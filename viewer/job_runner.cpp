#include "viewer/job_runner.h"

#include <QMetaObject>

namespace kiln::viewer {

JobRunner::JobRunner(QObject* parent) : QObject(parent) { thread_ = std::thread([this] { loop(); }); }

JobRunner::~JobRunner() { stop(); }

void JobRunner::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    for (Job& j : queue_) j.cancel->store(true);
    queue_.clear();
    if (running_cancel_) running_cancel_->store(true);
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void JobRunner::post(const QString& tag, Work work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    for (auto it = queue_.begin(); it != queue_.end();) {
      if (it->tag == tag) {
        it = queue_.erase(it);
        --pending_;
      } else {
        ++it;
      }
    }
    if (running_tag_ == tag && running_cancel_) running_cancel_->store(true);
    queue_.push_back({tag, std::move(work), std::make_shared<std::atomic<bool>>(false)});
    ++pending_;
  }
  wake_.notify_one();
}

void JobRunner::cancel(const QString& tag) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = queue_.begin(); it != queue_.end();) {
    if (it->tag == tag) {
      it = queue_.erase(it);
      --pending_;
    } else {
      ++it;
    }
  }
  if (running_tag_ == tag && running_cancel_) running_cancel_->store(true);
}

void JobRunner::cancelAll() {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_ -= int(queue_.size());
  queue_.clear();
  if (running_cancel_) running_cancel_->store(true);
}

bool JobRunner::isIdle() const { return pending_.load() == 0; }

void JobRunner::loop() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      running_tag_ = job.tag;
      running_cancel_ = job.cancel;
    }
    QString tag = job.tag;
    QMetaObject::invokeMethod(this, [this, tag] { emit jobStarted(tag); }, Qt::QueuedConnection);
    JobContext ctx;
    ctx.cancel = job.cancel.get();
    ctx.progress = [this, tag](double f, const std::string& what) {
      QString w = QString::fromStdString(what);
      QMetaObject::invokeMethod(this, [this, tag, f, w] { emit jobProgress(tag, f, w); }, Qt::QueuedConnection);
    };
    Done done;
    try {
      done = job.work(ctx);
    } catch (const std::exception& e) {
      // A job's own errors come back through `done`; this is a bug in a job,
      // reported rather than taking the workbench down.
      std::string what = e.what();
      done = [this, tag, what] { emit jobProgress(tag, 1.0, "internal error: " + QString::fromStdString(what)); };
    }
    auto cancel = job.cancel;
    const bool deliver_anyway = ctx.deliver_when_cancelled;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      running_tag_.clear();
      running_cancel_.reset();
    }
    // A result that a newer request made stale is dropped here, on the UI thread.
    QMetaObject::invokeMethod(
        this,
        [this, tag, done = std::move(done), cancel, deliver_anyway] {
          if (done && (deliver_anyway || !cancel->load())) done();
          --pending_;
          emit jobFinished(tag);
        },
        Qt::QueuedConnection);
  }
}

}  // namespace kiln::viewer
