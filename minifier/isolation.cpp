#include "minifier/isolation.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace kiln::minify {

namespace {

using Clock = std::chrono::steady_clock;

// The address space this process already has: the limit is added to it, as
// LLVM and the libraries alone reserve more than a small limit would allow.
int64_t current_address_space() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  long pages = 0;
  int got = std::fscanf(f, "%ld", &pages);
  std::fclose(f);
  return got == 1 ? int64_t(pages) * int64_t(sysconf(_SC_PAGESIZE)) : 0;
}

void write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    done += size_t(n);
  }
}

[[noreturn]] void child_main(const ChildJob& job, const Limits& limits, int fd, pid_t parent) {
  // Its own process group, so a timeout kills what it started too (oracle commands).
  ::setpgid(0, 0);
  // And it dies with the minifier, killed with -9 or not, taking that group
  // along: the oracle's commands would otherwise run on for minutes.
  std::signal(SIGTERM, [](int) {
    ::kill(0, SIGKILL);
    _exit(128 + SIGTERM);
  });
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) {  // the minifier died before the line above
    ::kill(0, SIGKILL);
    _exit(128 + SIGTERM);
  }
  // A crash must end the child at once: handlers inherited from the parent
  // (QtTest's runs gdb for a stack trace, LLVM's symbolizes) would take seconds.
  for (int sig : {SIGSEGV, SIGILL, SIGABRT, SIGFPE, SIGBUS, SIGTRAP, SIGSYS})
    std::signal(sig, SIG_DFL);
  struct rlimit core = {0, 0};
  ::setrlimit(RLIMIT_CORE, &core);  // crashing candidates are expected; no core files
  if (limits.memory_mb > 0) {
    // The soft limit only: the oracle predicate lifts it again for the
    // external command it runs (CUDA reserves far more address space than it uses).
    rlim_t as = rlim_t(current_address_space() + limits.memory_mb * (int64_t(1) << 20));
    struct rlimit r;
    ::getrlimit(RLIMIT_AS, &r);
    r.rlim_cur = std::min(as, r.rlim_max);
    ::setrlimit(RLIMIT_AS, &r);
  }
  if (limits.timeout_s > 0) {
    // A backstop for a child the parent could not kill; the wall timeout fires first.
    rlim_t cpu = rlim_t(limits.timeout_s * 4 + 2);
    struct rlimit r = {cpu, cpu + 1};
    ::setrlimit(RLIMIT_CPU, &r);
  }
  // Whatever the compiler or a trapping kernel prints is not the minifier's output.
  if (!std::getenv("KILN_MINIFY_CHILD_OUTPUT")) {
    int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (devnull >= 0) {
      ::dup2(devnull, STDOUT_FILENO);
      ::dup2(devnull, STDERR_FILENO);
    }
  }
  int code = 0;
  std::string payload;
  try {
    payload = job();
  } catch (const std::bad_alloc&) {
    code = kOomExitCode;
  } catch (const std::exception& e) {
    code = kExceptionExitCode;
    payload = e.what();
  }
  write_all(fd, payload);
  ::close(fd);
  // _exit: no atexit handlers or static destructors of the parent's state
  // (its journal connection, its Qt objects) run in the child.
  ::_exit(code);
}

struct Running {
  size_t job = 0;
  pid_t pid = -1;
  int fd = -1;
  Clock::time_point start, deadline;
  bool exited = false, killed = false, cancelled = false;
  int status = 0;
};

}  // namespace

std::string signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGBUS: return "SIGBUS";
    case SIGKILL: return "SIGKILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGXCPU: return "SIGXCPU";
    case SIGTERM: return "SIGTERM";
    default: return "signal " + std::to_string(sig);
  }
}

std::vector<ChildOutcome> run_in_children(const std::vector<ChildJob>& jobs, const Limits& limits, int parallel) {
  std::vector<ChildOutcome> out(jobs.size());
  std::vector<Running> running;
  size_t next = 0;
  parallel = std::max(parallel, 1);
  auto finish = [&](Running& r) {
    ChildOutcome& o = out[r.job];
    o.wall_s = std::chrono::duration<double>(Clock::now() - r.start).count();
    if (r.cancelled) {
      o.end = ChildOutcome::End::Cancelled;
    } else if (r.killed) {
      o.end = ChildOutcome::End::TimedOut;
    } else if (WIFSIGNALED(r.status)) {
      o.end = ChildOutcome::End::Signaled;
      o.signal = WTERMSIG(r.status);
    } else {
      o.end = ChildOutcome::End::Exited;
      o.exit_code = WEXITSTATUS(r.status);
    }
    // Anything the child left running (an oracle's subprocess) goes with it.
    ::kill(-r.pid, SIGKILL);
  };
  auto cancelled = [&] { return limits.cancel && limits.cancel->load(); };
  while (next < jobs.size() || !running.empty()) {
    if (cancelled())
      while (next < jobs.size()) out[next++].end = ChildOutcome::End::Cancelled;
    while (next < jobs.size() && int(running.size()) < parallel) {
      int fds[2];
      if (::pipe2(fds, O_CLOEXEC) != 0) {
        out[next++].end = ChildOutcome::End::ForkFailed;
        continue;
      }
      std::fflush(nullptr);  // buffered output must not be written twice
      const pid_t parent = ::getpid();
      pid_t pid = ::fork();
      if (pid < 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        out[next++].end = ChildOutcome::End::ForkFailed;
        continue;
      }
      if (pid == 0) {
        ::close(fds[0]);
        child_main(jobs[next], limits, fds[1], parent);
      }
      ::setpgid(pid, pid);  // also here: the parent may kill before the child ran setpgid
      ::close(fds[1]);
      Running r;
      r.job = next++;
      r.pid = pid;
      r.fd = fds[0];
      r.start = Clock::now();
      r.deadline = limits.timeout_s > 0 ? r.start + std::chrono::microseconds(int64_t(limits.timeout_s * 1e6))
                                        : Clock::time_point::max();
      running.push_back(r);
    }
    // Read what is there, waiting at most until the nearest deadline.
    std::vector<pollfd> pfds;
    auto now = Clock::now();
    int wait_ms = 50;
    for (const Running& r : running) {
      if (r.fd >= 0) pfds.push_back({r.fd, POLLIN, 0});
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(r.deadline - now).count();
      wait_ms = int(std::clamp<int64_t>(left + 1, 0, wait_ms));
    }
    if (!pfds.empty()) ::poll(pfds.data(), nfds_t(pfds.size()), wait_ms);
    else ::usleep(useconds_t(wait_ms) * 1000);
    now = Clock::now();
    for (Running& r : running) {
      if (r.fd >= 0) {
        char buf[65536];
        for (;;) {
          pollfd p = {r.fd, POLLIN, 0};
          if (::poll(&p, 1, 0) <= 0 || !(p.revents & (POLLIN | POLLHUP))) break;
          ssize_t n = ::read(r.fd, buf, sizeof buf);
          if (n > 0) {
            out[r.job].payload.append(buf, size_t(n));
            continue;
          }
          if (n < 0 && errno == EINTR) continue;
          ::close(r.fd);  // EOF or error
          r.fd = -1;
          break;
        }
      }
      if (!r.exited) {
        pid_t w = ::waitpid(r.pid, &r.status, WNOHANG);
        if (w == r.pid) r.exited = true;
      }
      if (!r.exited && (now >= r.deadline || cancelled())) {
        ::kill(-r.pid, SIGKILL);
        ::kill(r.pid, SIGKILL);
        ::waitpid(r.pid, &r.status, 0);
        r.exited = r.killed = true;
        r.cancelled = now < r.deadline;
        if (r.fd >= 0) {
          ::close(r.fd);
          r.fd = -1;
        }
      }
      // An exited child whose pipe a grandchild still holds open: stop reading.
      if (r.exited && r.fd >= 0 && !r.killed) {
        pollfd p = {r.fd, POLLIN, 0};
        if (::poll(&p, 1, 0) == 0) {
          ::close(r.fd);
          r.fd = -1;
        }
      }
    }
    for (auto it = running.begin(); it != running.end();) {
      if (it->exited && it->fd < 0) {
        finish(*it);
        it = running.erase(it);
      } else {
        ++it;
      }
    }
  }
  return out;
}

}  // namespace kiln::minify
