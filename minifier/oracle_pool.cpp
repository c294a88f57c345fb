#include "minifier/oracle_pool.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

extern char** environ;

namespace kiln::minify {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kReplyLineMax = size_t(1) << 20;

int64_t resident_bytes(pid_t pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/statm";
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return 0;
  long size = 0, resident = 0;
  int got = std::fscanf(f, "%ld %ld", &size, &resident);
  std::fclose(f);
  return got == 2 ? int64_t(resident) * int64_t(::sysconf(_SC_PAGESIZE)) : 0;
}

std::string tail_of_file(const std::string& path, size_t bytes) {
  std::string text = read_bounded_output(path);
  return text.size() > bytes ? text.substr(text.size() - bytes) : text;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Whether `pid` exited within `tries` x 10 ms (its status in `status`).
bool reaped_within(pid_t pid, int& status, int tries) {
  for (int i = 0; i < tries; ++i) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return true;
    ::usleep(10000);
  }
  return false;
}

}  // namespace

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out.append("'\\''");
    else out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

std::string cut_oracle_output(const std::string& head, const std::string& tail) {
  return head + "\n[... oracle output past " + std::to_string(kOracleOutputKeep >> 20) + " MB not kept ...]\n" + tail;
}

std::string read_bounded_output(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return "";
  std::string head(kOracleOutputKeep, '\0');
  f.read(head.data(), std::streamsize(head.size()));
  head.resize(size_t(f.gcount()));
  if (head.size() < kOracleOutputKeep) return head;
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec || size <= kOracleOutputKeep) return head;
  std::string tail(std::min<uintmax_t>(kOracleTailKeep, size - kOracleOutputKeep), '\0');
  f.clear();
  f.seekg(std::streamoff(size - tail.size()));
  f.read(tail.data(), std::streamsize(tail.size()));
  tail.resize(size_t(f.gcount()));
  return cut_oracle_output(head, tail);
}

struct OraclePool::Worker {
  enum class State { Down, Starting, Idle, Busy };
  int index = 0;
  pid_t pid = -1;
  int request_fd = -1, reply_fd = -1;
  State state = State::Down;
  std::string buffer;  // reply bytes not yet ending in a newline
  size_t job = 0;
  Clock::time_point since, deadline, next_memory_check;
  std::string log;
};

std::string default_pycache_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (xdg && *xdg) return std::string(xdg) + "/kiln/pycache";
  if (home && *home) return std::string(home) + "/.cache/kiln/pycache";
  return "";
}

OraclePool::OraclePool(OraclePoolOptions options) : options_(std::move(options)) {
  options_.parallel = std::max(options_.parallel, 1);
  if (options_.memory_mb <= 0) {
    const int64_t physical = int64_t(::sysconf(_SC_PHYS_PAGES)) * int64_t(::sysconf(_SC_PAGESIZE));
    options_.memory_mb = std::max<int64_t>(2048, physical / (int64_t(options_.parallel) + 1) >> 20);
  }
  // A worker that dies between two requests must not take Kiln down with SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  // The pid in the name lets a later minify remove what a killed one left (predicate.h).
  std::string tmpl = (fs::temp_directory_path() / ("kiln-oracle-" + std::to_string(::getpid()) + "-XXXXXX")).string();
  if (!::mkdtemp(tmpl.data())) {
    fatal_ = "cannot make a temporary folder for the oracle workers";
    return;
  }
  folder_ = tmpl;
  std::string script = options_.worker_script;
  if (script.empty()) {
    script = folder_ + "/kiln_oracle_worker.py";
    std::ofstream f(script, std::ios::binary);
    f << oracle_worker_script();
    if (!f) fatal_ = "cannot write the oracle worker script to " + script;
  } else if (!fs::exists(script)) {
    fatal_ = "the oracle worker script " + script + " does not exist";
  }
  options_.worker_script = script;
  for (int i = 0; i < options_.parallel; ++i) {
    workers_.push_back(std::make_unique<Worker>());
    workers_.back()->index = i;
    workers_.back()->log = folder_ + "/worker-" + std::to_string(i) + ".log";
  }
}

OraclePool::~OraclePool() {
  for (auto& w : workers_) stop(*w, false);
  std::error_code ec;
  if (!folder_.empty()) fs::remove_all(folder_, ec);
}

bool OraclePool::start(Worker& w) {
  int request[2], reply[2];
  if (::pipe2(request, O_CLOEXEC) != 0) return false;
  if (::pipe2(reply, O_CLOEXEC) != 0) {
    ::close(request[0]);
    ::close(request[1]);
    return false;
  }
  std::string command = "exec " + options_.python + " " + shell_quote(options_.worker_script);
  if (!options_.warm_up_device.empty()) command += " --warm-up " + shell_quote(options_.warm_up_device);
  // The environment is made here: between fork and exec only
  // async-signal-safe calls are allowed (the workbench forks from a process
  // with many threads).
  std::vector<std::string> env_text;
  bool threads_set = false;
  auto overridden = [&](const std::string& entry) {
    const std::string name = entry.substr(0, entry.find('='));
    for (const std::string& e : options_.env)
      if (e.substr(0, e.find('=')) == name) return true;
    return false;
  };
  bool pycache_set = false, bytecode_off = false;
  auto note = [&](const std::string& entry) {
    threads_set |= entry.rfind("TORCHINDUCTOR_COMPILE_THREADS=", 0) == 0;
    pycache_set |= entry.rfind("PYTHONPYCACHEPREFIX=", 0) == 0;
    bytecode_off |= entry.rfind("PYTHONDONTWRITEBYTECODE=", 0) == 0;
  };
  for (char** e = environ; *e; ++e) {
    if (overridden(*e)) continue;
    env_text.emplace_back(*e);
    note(env_text.back());
  }
  for (const std::string& e : options_.env) {
    env_text.push_back(e);
    note(e);
  }
  // Where the packages have no bytecode and Python may not write it
  // (containers set PYTHONDONTWRITEBYTECODE, installs are read-only), every
  // import compiles torch's sources again: 10-12 s of a worker's start on the
  // H200 machine. The workers keep their bytecode in Kiln's cache folder
  // instead, never beside the sources, so the second start on is cheaper.
  // A PYTHONPYCACHEPREFIX of the user's own is kept as it is.
  if (!pycache_set && !options_.pycache_dir.empty()) {
    if (bytecode_off)
      env_text.erase(std::remove_if(env_text.begin(), env_text.end(),
                                    [](const std::string& e) { return e.rfind("PYTHONDONTWRITEBYTECODE=", 0) == 0; }),
                     env_text.end());
    env_text.push_back("PYTHONPYCACHEPREFIX=" + options_.pycache_dir);
  }
  // Inductor starts a compile process per core in every worker: with N
  // workers, share the cores out rather than start N times as many.
  if (!threads_set) {
    const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
    const long threads = options_.compile_threads > 0 ? options_.compile_threads : std::max<long>(1, cores / options_.parallel);
    env_text.push_back("TORCHINDUCTOR_COMPILE_THREADS=" + std::to_string(threads));
  }
  std::vector<char*> envp;
  for (std::string& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  char sh[] = "sh", dash_c[] = "-c";
  std::vector<char> command_text(command.begin(), command.end());
  command_text.push_back('\0');
  char* argv[] = {sh, dash_c, command_text.data(), nullptr};
  const int log = ::open(w.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Its own process group, so a kill takes Inductor's compile workers too,
    // and it dies with Kiln however Kiln dies.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(127);
    ::dup2(request[0], 0);
    ::dup2(reply[1], 3);
    if (log >= 0) {
      ::dup2(log, 1);
      ::dup2(log, 2);
    }
    // The evaluator caps its children's address space for Kiln's compiles;
    // CUDA's initialisation needs far more than that.
    struct rlimit as;
    if (::getrlimit(RLIMIT_AS, &as) == 0) {
      as.rlim_cur = as.rlim_max;
      ::setrlimit(RLIMIT_AS, &as);
    }
    std::signal(SIGPIPE, SIG_DFL);
    ::execve("/bin/sh", argv, envp.data());
    _exit(127);
  }
  ::close(request[0]);
  ::close(reply[1]);
  if (log >= 0) ::close(log);
  if (pid < 0) {
    ::close(request[1]);
    ::close(reply[0]);
    return false;
  }
  ::setpgid(pid, pid);  // also here: no race with a kill before the child ran setpgid
  ::fcntl(reply[0], F_SETFL, ::fcntl(reply[0], F_GETFL) | O_NONBLOCK);
  w.pid = pid;
  w.request_fd = request[1];
  w.reply_fd = reply[0];
  w.state = Worker::State::Starting;
  w.buffer.clear();
  w.since = Clock::now();
  w.deadline = w.since + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.startup_timeout_s));
  ++stats_.worker_starts;
  return true;
}

// Ends a worker: politely (its stdin closes and it has a second to leave)
// unless kill_now, then its whole process group with SIGKILL.
void OraclePool::stop(Worker& w, bool kill_now) {
  if (w.state == Worker::State::Down) return;
  if (w.request_fd >= 0) ::close(w.request_fd);
  w.request_fd = -1;
  int status = 0;
  const bool reaped = !kill_now && reaped_within(w.pid, status, 100);
  ::kill(-w.pid, SIGKILL);
  if (!reaped) ::waitpid(w.pid, &status, 0);
  if (w.reply_fd >= 0) ::close(w.reply_fd);
  w.reply_fd = -1;
  w.pid = -1;
  w.state = Worker::State::Down;
}

void OraclePool::start_all() {
  if (!fatal_.empty()) return;
  for (auto& w : workers_)
    if (w->state == Worker::State::Down && !start(*w)) {
      fatal_ = "cannot start the oracle worker: " + std::string(std::strerror(errno));
      return;
    }
}

std::vector<OracleRun> OraclePool::run(const std::vector<OracleJob>& jobs,
                                       const std::function<bool(size_t, const OracleRun&)>& enough) {
  std::vector<OracleRun> out(jobs.size());
  bool stopped = false;
  std::vector<bool> done(jobs.size(), false);
  size_t next = 0, finished = 0;
  auto finish = [&](size_t job, OracleRun r) {
    if (done[job]) return;
    done[job] = true;
    ++finished;
    out[job] = std::move(r);
    if (!stopped && enough && out[job].end != OracleRun::End::Failed && enough(job, out[job])) {
      stopped = true;
      for (size_t j = next; j < jobs.size(); ++j) {
        OracleRun skipped;
        skipped.end = OracleRun::End::Cancelled;
        skipped.detail = "not run";
        done[j] = true;
        ++finished;
        out[j] = std::move(skipped);
      }
      next = jobs.size();
    }
  };
  auto fail_rest = [&](OracleRun::End end, const std::string& why) {
    for (auto& w : workers_)
      if (w->state == Worker::State::Busy) stop(*w, true);
    for (size_t j = 0; j < jobs.size(); ++j) {
      OracleRun r;
      r.end = end;
      r.detail = why;
      finish(j, r);
    }
  };
  auto worker_ended = [&](Worker& w, pid_t pid, int status, OracleRun::End end) {
    OracleRun r;
    r.end = end;
    r.worker_pid = int(pid);
    r.wall_s = seconds_since(w.since);
    if (end == OracleRun::End::Exited && WIFSIGNALED(status)) {
      r.end = OracleRun::End::Signaled;
      r.signal = WTERMSIG(status);
    } else if (end == OracleRun::End::Exited) {
      r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
    r.output = read_bounded_output(jobs[w.job].output);
    finish(w.job, std::move(r));
  };
  // A worker whose reply pipe closed: it is gone (or about to be); its
  // candidate ends as the process ended, as `python repro.py` would have.
  auto on_exit = [&](Worker& w) {
    int status = 0;
    if (!reaped_within(w.pid, status, 100)) {
      ::kill(-w.pid, SIGKILL);
      ::waitpid(w.pid, &status, 0);
    }
    ::kill(-w.pid, SIGKILL);  // what it started
    const Worker::State was = w.state;
    ::close(w.request_fd);
    ::close(w.reply_fd);
    w.request_fd = w.reply_fd = -1;
    if (was == Worker::State::Busy) {
      ++stats_.restarts_crash;
      worker_ended(w, w.pid, status, OracleRun::End::Exited);
    } else if (was == Worker::State::Starting) {
      std::string how = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                            : "exit " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
      fatal_ = "the oracle worker (" + options_.python + ") ended before it was ready (" + how + "); its log ends:\n" +
               tail_of_file(w.log, 2000);
    }
    w.pid = -1;
    w.state = Worker::State::Down;
  };
  auto on_line = [&](Worker& w, const std::string& line) {
    nlohmann::json reply = nlohmann::json::parse(line, nullptr, false);
    if (reply.is_discarded() || !reply.is_object()) {
      fatal_ = "the oracle worker wrote a line that is not a JSON object to fd 3: " + line.substr(0, 200);
      return;
    }
    if (w.state == Worker::State::Starting) {
      if (!reply.value("ready", false)) {
        fatal_ = "the oracle worker (" + options_.python + ") cannot run: " + reply.value("error", std::string("it said it is not ready"));
        stop(w, true);
        return;
      }
      stats_.startup_s = std::max(stats_.startup_s, seconds_since(w.since));
      if (reply.contains("import_s") && reply["import_s"].is_number())
        stats_.import_s = std::max(stats_.import_s, reply["import_s"].get<double>());
      if (reply.contains("warm_up_s") && reply["warm_up_s"].is_number())
        stats_.warm_up_s = std::max(stats_.warm_up_s, reply["warm_up_s"].get<double>());
      w.state = Worker::State::Idle;
      return;
    }
    if (w.state != Worker::State::Busy || !reply.contains("exit") || !reply["exit"].is_number_integer()) {
      fatal_ = "the oracle worker wrote an unexpected reply: " + line.substr(0, 200);
      return;
    }
    OracleRun r;
    r.end = OracleRun::End::Exited;
    r.exit_code = reply["exit"].get<int>();
    r.wall_s = seconds_since(w.since);
    r.worker_pid = int(w.pid);
    r.output = read_bounded_output(jobs[w.job].output);
    finish(w.job, std::move(r));
    w.state = Worker::State::Idle;
    if (reply.value("restart", false)) {
      ++stats_.restarts_asked;
      stop(w, false);
    } else if (resident_bytes(w.pid) > (options_.memory_mb << 20)) {
      ++stats_.restarts_memory;  // it leaked past the bound between candidates
      stop(w, false);
    }
  };

  if (!fatal_.empty()) fail_rest(OracleRun::End::Failed, fatal_);
  const size_t wanted = std::min(workers_.size(), jobs.size());
  while (finished < jobs.size()) {
    if (options_.cancel && options_.cancel->load()) {
      fail_rest(OracleRun::End::Cancelled, "cancelled");
      break;
    }
    for (size_t i = 0; i < wanted && fatal_.empty(); ++i) {
      Worker& w = *workers_[i];
      if (w.state == Worker::State::Down && next < jobs.size() && !start(w))
        fatal_ = "cannot start the oracle worker: " + std::string(std::strerror(errno));
      if (w.state != Worker::State::Idle || next >= jobs.size()) continue;
      std::error_code ec;
      fs::remove(jobs[next].output, ec);
      const std::string request =
          nlohmann::json{{"id", next}, {"repro", jobs[next].repro}, {"output", jobs[next].output}}.dump() + "\n";
      w.job = next++;
      w.state = Worker::State::Busy;
      w.since = Clock::now();
      w.deadline = w.since + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.timeout_s));
      w.next_memory_check = w.since;
      if (::write(w.request_fd, request.data(), request.size()) != ssize_t(request.size())) {
        // Gone between two requests: its reply pipe says so on the next poll.
      }
    }
    if (!fatal_.empty()) {
      fail_rest(OracleRun::End::Failed, fatal_);
      break;
    }
    std::vector<pollfd> fds;
    std::vector<Worker*> polled;
    for (auto& w : workers_)
      if (w->state == Worker::State::Starting || w->state == Worker::State::Busy) {
        fds.push_back({w->reply_fd, POLLIN, 0});
        polled.push_back(w.get());
      }
    ::poll(fds.data(), fds.size(), 50);
    for (size_t k = 0; k < fds.size() && fatal_.empty(); ++k) {
      Worker& w = *polled[k];
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t n = ::read(w.reply_fd, buf, sizeof buf);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) {
        on_exit(w);
        continue;
      }
      w.buffer.append(buf, size_t(n));
      for (size_t nl; fatal_.empty() && w.state != Worker::State::Down && (nl = w.buffer.find('\n')) != std::string::npos;) {
        std::string line = w.buffer.substr(0, nl);
        w.buffer.erase(0, nl + 1);
        on_line(w, line);
      }
      if (w.buffer.size() > kReplyLineMax) fatal_ = "the oracle worker wrote a reply line longer than 1 MB";
    }
    if (!fatal_.empty()) {
      fail_rest(OracleRun::End::Failed, fatal_);
      break;
    }
    const auto now = Clock::now();
    for (auto& wp : workers_) {
      Worker& w = *wp;
      if (w.state == Worker::State::Starting && now > w.deadline) {
        fatal_ = "the oracle worker (" + options_.python + ") did not say it was ready within " +
                 std::to_string(int(options_.startup_timeout_s)) + " s; its log ends:\n" + tail_of_file(w.log, 2000);
        stop(w, true);
      }
      if (w.state != Worker::State::Busy) continue;
      const pid_t pid = w.pid;
      if (now > w.deadline) {
        stop(w, true);
        ++stats_.restarts_hang;
        worker_ended(w, pid, 0, OracleRun::End::TimedOut);
      } else if (now >= w.next_memory_check) {
        w.next_memory_check = now + std::chrono::milliseconds(100);
        if (resident_bytes(w.pid) > 2 * (options_.memory_mb << 20)) {
          stop(w, true);
          ++stats_.restarts_memory;
          worker_ended(w, pid, 0, OracleRun::End::OutOfMemory);
        }
      }
    }
  }
  return out;
}

}  // namespace kiln::minify
