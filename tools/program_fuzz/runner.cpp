#include "runner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "compiler/aot/eager_autograd.h"
#include "compiler/capture/capture.h"
#include "compiler/codegen/cuda/cuda_api.h"
#include "compiler/pipeline/region_backends.h"
#include "core/python/vm.h"

namespace kiln::fuzz {

namespace {

constexpr size_t kMaxCapture = 1 << 20;  // a runaway print loop must not fill the disk

void append_capped(std::string& s, std::string_view more) {
  if (s.size() < kMaxCapture) s.append(more.substr(0, kMaxCapture - s.size()));
}

[[noreturn]] void child(const RunRequest& r, const std::string& result_path) {
  alarm(unsigned(r.timeout_s));
  std::string out, err;
  py::VMOptions options;
  options.out = [&out](std::string_view s) { append_capped(out, s); };
  options.err = [&err](std::string_view s) { append_capped(err, s); };
  int code = 0;
  {
    py::VM vm(options);
    aot::install_eager_autograd();
    capture::CaptureOptions co;
    co.default_backend = r.backend == "none" ? "eager" : r.backend;
    co.disable_compile = r.backend == "none";
    co.backend_runner = [&vm](const std::string& b, const std::string& m, const std::string& id) {
      return pipeline::region_runner(vm, b, m, id);
    };
    capture::install_capture(vm, co);
    try {
      Status st = vm.run_source(r.source, "fuzz_program.py", &code);
      if (!st.ok()) append_capped(err, "kiln: " + st.to_string() + "\n");
    } catch (const std::exception& e) {
      append_capped(err, std::string("kiln: uncaught C++ exception: ") + e.what() + "\n");
      code = 70;
    } catch (...) {
      append_capped(err, "kiln: uncaught non-standard C++ exception\n");
      code = 70;
    }
  }
  std::ofstream f(result_path, std::ios::binary);
  f << code << "\n" << out.size() << "\n" << out << err.size() << "\n" << err;
  f.close();
  std::_Exit(f ? 0 : 71);
}

RunResult read_result(const std::string& path, int status) {
  RunResult r;
  if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
    r.timed_out = r.signal == SIGALRM;
    return r;
  }
  std::ifstream f(path, std::ios::binary);
  size_t n = 0;
  if (!(f >> r.code >> n) || f.get() != '\n') {
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.err = "kiln-program-fuzz: the child left no result";
    return r;
  }
  r.out.resize(n);
  f.read(r.out.data(), std::streamsize(n));
  if (f >> n && f.get() == '\n') {
    r.err.resize(n);
    f.read(r.err.data(), std::streamsize(n));
  }
  return r;
}

}  // namespace

std::string RunResult::status() const {
  if (timed_out) return "timeout";
  if (signal) return "signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  if (code) return "exit " + std::to_string(code);
  return "ok";
}

std::vector<RunResult> run_all(const std::vector<RunRequest>& requests, int jobs,
                               const std::function<void(size_t, const RunResult&)>& on_done) {
  std::vector<RunResult> results(requests.size());
  struct Running {
    size_t index;
    std::string path;
    std::chrono::steady_clock::time_point start;
  };
  std::map<pid_t, Running> running;
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = tmp && *tmp ? tmp : "/tmp";
  size_t next = 0;
  std::fflush(nullptr);  // a child must not write the parent's buffered output again
  std::signal(SIGCHLD, SIG_DFL);  // an inherited SIG_IGN would make waitpid find no child
  while (next < requests.size() || !running.empty()) {
    while (next < requests.size() && int(running.size()) < std::max(1, jobs)) {
      std::string path = dir + "/kiln-program-fuzz-XXXXXX";
      int fd = mkstemp(path.data());
      if (fd < 0) {
        results[next].code = -1;
        results[next].err = "kiln-program-fuzz: cannot make a result file in " + dir;
        if (on_done) on_done(next, results[next]);
        ++next;
        continue;
      }
      close(fd);
      pid_t pid = fork();
      if (pid == 0) child(requests[next], path);
      if (pid < 0) {
        unlink(path.c_str());
        results[next].code = -1;
        results[next].err = "kiln-program-fuzz: fork failed";
        if (on_done) on_done(next, results[next]);
        ++next;
        continue;
      }
      running[pid] = {next, path, std::chrono::steady_clock::now()};
      ++next;
    }
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) {
      // Never "ok" by default: a run that was not collected is a failure.
      for (auto& [child_pid, r] : running) {
        results[r.index].code = -1;
        results[r.index].err = "kiln-program-fuzz: lost the child process (waitpid failed)";
        unlink(r.path.c_str());
      }
      break;
    }
    auto it = running.find(pid);
    if (it == running.end()) continue;
    RunResult r = read_result(it->second.path, status);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - it->second.start).count();
    unlink(it->second.path.c_str());
    results[it->second.index] = std::move(r);
    if (on_done) on_done(it->second.index, results[it->second.index]);
    running.erase(it);
  }
  return results;
}

bool cuda_usable() {
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) std::_Exit(codegen::cuda::cuda_init().ok() ? 0 : 1);
  int status = 0;
  return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace kiln::fuzz
