#pragma once
// The one thread that lays out graphs for every graph view (Graphviz has
// global state), with an in-memory cache of finished layouts. Each view is a
// client with at most one queued request: a newer request replaces the
// queued one and cancels the running one (RenderDoc's tagged AsyncInvoke).
// Results come back on the worker thread through the callback; GraphView
// turns them into queued calls on its own thread.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>

#include "session/graph_scene.h"

namespace kiln {

struct SceneLayout {
  std::shared_ptr<const Graph> graph;
  std::set<std::string> expanded;  // the expanded scopes this scene was built with
  GraphScene scene;
  LayoutResult layout;
  double layout_ms = 0;  // the worker's time for this request: scene + layout (near 0 from the cache)
  bool from_cache = false;
};

struct SceneRequest {
  std::shared_ptr<const Graph> graph;
  std::set<std::string> expanded;
  // A first look at a graph: expand every scope when the graph is small
  // (<= collapse_threshold nodes), none otherwise; `expanded` is ignored.
  bool choose_expansion = false;
  int collapse_threshold = 300;
  TextMetrics metrics;
  LayoutOptions options;  // progress and cancel are set by the worker
};

class GraphLayoutWorker {
 public:
  using Done = std::function<void(std::shared_ptr<const SceneLayout>)>;
  using Progress = std::function<void(int percent)>;

  static GraphLayoutWorker& instance();
  ~GraphLayoutWorker();

  // Queues `request` for `client`, replacing its queued request and cancelling its running one.
  void submit(const void* client, SceneRequest request, Done done, Progress progress = {});
  // Drops the client's queued request and cancels its running one; its callbacks may still run
  // once more if already under way, so the caller guards them (GraphView does).
  void forget(const void* client);

  // The same computation, synchronously on the calling thread (tests, the CLI);
  // it takes the worker's lock so Graphviz is never entered twice.
  std::shared_ptr<const SceneLayout> compute(const SceneRequest& request, const Progress& progress = {},
                                             const std::atomic<bool>* cancel = nullptr);
  void clear_cache();
  size_t cache_size() const;

 private:
  GraphLayoutWorker();
  struct Job {
    const void* client;
    SceneRequest request;
    Done done;
    Progress progress;
  };
  void run();
  std::shared_ptr<const SceneLayout> compute_locked(const SceneRequest& request, const Progress& progress,
                                                    const std::atomic<bool>* cancel);

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> queue_;
  const void* running_client_ = nullptr;
  std::atomic<bool> cancel_running_{false};
  bool stopping_ = false;
  std::mutex graphviz_mutex_;  // held while laying out: one Graphviz user at a time

  // LRU of finished layouts by scene_layout_key.
  static constexpr size_t kCacheEntries = 64;
  std::list<std::pair<uint64_t, std::shared_ptr<const SceneLayout>>> lru_;
  std::unordered_map<uint64_t, decltype(lru_)::iterator> cache_;

  std::thread thread_;
};

}  // namespace kiln
