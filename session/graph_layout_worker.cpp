#include "session/graph_layout_worker.h"

#include <chrono>

namespace kiln {

GraphLayoutWorker& GraphLayoutWorker::instance() {
  static GraphLayoutWorker worker;
  return worker;
}

GraphLayoutWorker::GraphLayoutWorker() : thread_([this] { run(); }) {}

GraphLayoutWorker::~GraphLayoutWorker() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    queue_.clear();
    cancel_running_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void GraphLayoutWorker::submit(const void* client, SceneRequest request, Done done, Progress progress) {
  {
    std::lock_guard lock(mutex_);
    std::erase_if(queue_, [&](const Job& j) { return j.client == client; });
    if (running_client_ == client) cancel_running_ = true;
    queue_.push_back({client, std::move(request), std::move(done), std::move(progress)});
  }
  wake_.notify_one();
}

void GraphLayoutWorker::forget(const void* client) {
  std::lock_guard lock(mutex_);
  std::erase_if(queue_, [&](const Job& j) { return j.client == client; });
  if (running_client_ == client) cancel_running_ = true;
}

void GraphLayoutWorker::run() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      running_client_ = job.client;
      cancel_running_ = false;
    }
    std::shared_ptr<const SceneLayout> result = compute(job.request, job.progress, &cancel_running_);
    {
      std::lock_guard lock(mutex_);
      running_client_ = nullptr;
      // A cancelled result is stale: its replacement is already queued (or the client is gone).
      if (cancel_running_ || !result) continue;
    }
    job.done(std::move(result));
  }
}

std::shared_ptr<const SceneLayout> GraphLayoutWorker::compute(const SceneRequest& request, const Progress& progress,
                                                              const std::atomic<bool>* cancel) {
  std::lock_guard lock(graphviz_mutex_);
  return compute_locked(request, progress, cancel);
}

std::shared_ptr<const SceneLayout> GraphLayoutWorker::compute_locked(const SceneRequest& request,
                                                                     const Progress& progress,
                                                                     const std::atomic<bool>* cancel) {
  auto start = std::chrono::steady_clock::now();
  const Graph& g = *request.graph;
  std::set<std::string> expanded = request.expanded;
  if (request.choose_expansion)
    expanded = int(g.size()) <= request.collapse_threshold ? scope_paths(g) : std::set<std::string>{};

  uint64_t key = scene_layout_key(g, expanded, request.metrics);
  {
    std::lock_guard lock(mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      auto hit = std::make_shared<SceneLayout>(*it->second->second);
      hit->graph = request.graph;  // same structure, maybe another Graph object
      hit->from_cache = true;
      hit->layout_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      if (progress) progress(100);
      return hit;
    }
  }

  auto out = std::make_shared<SceneLayout>();
  out->graph = request.graph;
  out->expanded = std::move(expanded);
  out->scene = build_scene(g, out->expanded);
  LayoutOptions options = request.options;
  options.progress = progress;
  options.cancel = cancel;
  out->layout = layout_graph(layout_input(g, out->scene, request.metrics), options);
  if (out->layout.cancelled) return nullptr;
  out->layout_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  std::lock_guard lock(mutex_);
  lru_.emplace_front(key, out);
  cache_[key] = lru_.begin();
  if (lru_.size() > kCacheEntries) {
    cache_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return out;
}

void GraphLayoutWorker::clear_cache() {
  std::lock_guard lock(mutex_);
  lru_.clear();
  cache_.clear();
}

size_t GraphLayoutWorker::cache_size() const {
  std::lock_guard lock(mutex_);
  return lru_.size();
}

}  // namespace kiln
