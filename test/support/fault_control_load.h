// The control-file load of the fault tests: threads and processes writing and
// reading the control files, and what the instance must hold afterwards.
#pragma once

#include "support/fault_fixture.h"
#include "support/children.h"

namespace eventfs_it::fault {

struct EventState {
  std::string enable, filter;
  std::set<std::string> triggers;
};

std::map<std::string, EventState> instance_events(const std::string& inst);

// What is left in an instance: anything enabled, filtered or triggered.
std::vector<std::string> instance_leftovers(const std::string& inst);

// ---------------------------------------------------------------------------
// The control-file model: what is written where, what each file may show.

enum class Kind { Enable, Filter, Trigger, ErrorLog };

struct FileSpec {
  std::string rel;
  Kind kind;
  std::set<std::string> texts;  // Filter: every text it may show
  std::set<std::string> lines;  // Trigger: every line it may show
};

// A control file that one or more workers write valid values to; the last
// accepted write decides what the instance holds.
struct Slot {
  std::string rel;
  std::string kdir;                 // <system>/<event> in the instance
  bool filter;                      // else enable
  std::vector<std::string> values;  // "0" clears a filter
};

// A trigger that one worker alone adds and removes (and adds again while it
// is there, which the kernel refuses with EEXIST). Its filter never matches,
// so it never fires.
struct Owner {
  std::string rel, add, remove;
  std::string kdir, kernel_line, mount_line;  // mount_line: as the stable file of kdir's event shows it
  std::string target;                         // <system>/<event> it arms, or ""
};

struct BadWrite {
  std::string rel, data;
  int err;
};

struct Plan {
  std::vector<int> slots, owners;
  bool bad = false, preads = false, reads = true;
  unsigned seed = 0;
};

struct Env {
  std::string mnt;
  std::string header;  // the kernel's trigger file without triggers
  std::vector<FileSpec> files;
  std::vector<Slot> slots;
  std::vector<Owner> owners;
  std::vector<BadWrite> bad;
  Owner held;                     // added before the workers start, never removed
  std::vector<int> shared_fds;    // one open file each, shared by every worker (children inherit them)
  std::vector<int> shared_files;  // their FileSpec
};

enum SlotId { kWakeupFilter, kFreeRawFilter, kWakeupEnable, kWakeupRawEnable, kIrqEntryEnable, kIrqExitRawEnable };
enum OwnerId { kOwnMigrate, kOwnTraceoff, kOwnStacktrace, kOwnRawSoftirq, kOwnCpuIdle };

Env make_env(const std::string& mnt, const std::string& header);

int file_index(const Env& e, const std::string& rel);

// Opens the shared descriptors (before any worker forks).
::testing::AssertionResult open_shared(Env& e);

void close_shared(Env& e);

bool error_log_ok(const std::string& t);

bool whole_text_ok(const FileSpec& f, const std::string& header, const std::string& t);

// "" if `text`, read at `offset` (0 or 5), is what `f` may show there; else why not.
std::string check_read(const FileSpec& f, const std::string& header, const std::string& text, std::size_t offset);

// ---------------------------------------------------------------------------
// Workers: threads and child processes running a Plan. Their results live
// in memory shared across fork(), so that both kinds report the same way.

constexpr int kMaxRecs = 32768, kMaxOwners = 8, kMaxProblems = 8, kProblemLen = 400, kMaxWorkers = 16;

struct WriteRec {
  std::int32_t slot, value, err;
  std::int64_t start, end;
};

struct WorkerResult {
  WorkerResult() { std::fill(std::begin(owner_present), std::end(owner_present), -1); }
  std::atomic<int> done{0};
  long writes = 0, accepted = 0;             // valid writes
  long refusals = 0, refused = 0, dups = 0;  // writes that must be refused; refused as expected; of them EEXIST
  long unexpected = 0;                       // any write whose result was not the expected one
  long reads = 0, preads = 0, read_errors = 0, bad_texts = 0;
  int nrecs = 0;
  bool recs_full = false;
  WriteRec recs[kMaxRecs];
  signed char owner_present[kMaxOwners];  // -1: not this worker's
  int nproblems = 0;
  std::int64_t problem_at[kMaxProblems];
  char problems[kMaxProblems][kProblemLen];

  void note(const std::string& p) {
    if (nproblems < kMaxProblems) {
      problem_at[nproblems] = now_ns();
      std::snprintf(problems[nproblems], kProblemLen, "%s", p.c_str());
    }
    ++nproblems;
  }
};

struct Board {
  std::atomic<int> go{0}, stop{0};
  std::atomic<std::int64_t> deadline{0};
  WorkerResult w[kMaxWorkers];
};

void run_worker(const Env& env, const Plan& plan, WorkerResult& r, std::int64_t deadline,
                const std::atomic<int>& stop);

// Memory shared with the forked workers.
class SharedBoard {
 public:
  SharedBoard() {
    void* p = ::mmap(nullptr, sizeof(Board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) b_ = new (p) Board();
  }
  ~SharedBoard() {
    if (!b_) return;
    b_->~Board();
    ::munmap(b_, sizeof(Board));
  }
  SharedBoard(const SharedBoard&) = delete;
  SharedBoard& operator=(const SharedBoard&) = delete;
  bool ok() const { return b_ != nullptr; }
  Board& operator*() { return *b_; }
  Board* operator->() { return b_; }

 private:
  Board* b_ = nullptr;
};

// Worker threads and processes over one Env: processes are forked first
// (before the test starts threads of its own), all wait for Go().
class Workers {
 public:
  Workers(const Env& env, Board& board) : env_(env), b_(board) {}
  ~Workers() {
    b_.stop = 1;
    b_.go = 1;
    for (std::size_t k = 0; k < pids_.size(); ++k)
      if (!reaped_[k]) {
        ::kill(pids_[k], SIGKILL);
        ::waitpid(pids_[k], nullptr, 0);
      }
    JoinAll();
  }
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  // Returns the worker's index in the board, or -1.
  int AddProcess(const Plan& plan) {
    if (n_ >= kMaxWorkers) return -1;
    int i = n_;
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid == 0) {
      // The child runs its worker and ends; it never returns into the test.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      try {
        std::int64_t limit = now_ns() + 20'000'000'000;
        while (!b_.go.load() && now_ns() < limit) ::usleep(1000);
        if (b_.go.load()) run_worker(env_, plan, b_.w[i], b_.deadline.load(), b_.stop);
        b_.w[i].done = 1;
      } catch (...) {
        ::_exit(3);
      }
      ::_exit(0);
    }
    if (pid < 0) return -1;
    ++n_;
    pids_.push_back(pid);
    reaped_.push_back(false);
    statuses_.push_back(0);
    return i;
  }

  int AddThread(const Plan& plan) {
    if (n_ >= kMaxWorkers) return -1;
    int i = n_++;
    threads_.emplace_back([this, plan, i] {
      while (!b_.go.load()) std::this_thread::sleep_for(1ms);
      run_worker(env_, plan, b_.w[i], b_.deadline.load(), b_.stop);
      b_.w[i].done = 1;
    });
    return i;
  }

  void Go(std::chrono::milliseconds duration) {
    b_.deadline = now_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(duration).count();
    b_.go = 1;
  }
  void Stop() { b_.stop = 1; }

  // Waits (bounded) for every worker, reaping the processes; names the ones
  // still running. Threads are joined once all are done.
  std::vector<std::string> Wait(std::chrono::milliseconds limit) {
    auto deadline = Clock::now() + limit;
    std::vector<std::string> stuck;
    for (std::size_t k = 0; k < pids_.size(); ++k) {
      if (reaped_[k]) continue;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (wait_exit(pids_[k], std::max(left, 0ms), statuses_[k]))
        reaped_[k] = true;
      else
        stuck.push_back("worker process " + std::to_string(pids_[k]));
    }
    for (int i = 0; i < n_; ++i)
      while (!b_.w[i].done.load() && Clock::now() < deadline) std::this_thread::sleep_for(2ms);
    bool threads_done = true;
    for (int i = 0; i < n_; ++i)
      if (!b_.w[i].done.load()) threads_done = false;
    if (threads_done)
      JoinAll();
    else if (stuck.empty())
      stuck.push_back("worker threads");
    return stuck;
  }
  // Processes that did not end normally.
  std::vector<std::string> BadExits() const {
    std::vector<std::string> out;
    for (std::size_t k = 0; k < pids_.size(); ++k)
      if (reaped_[k] && !(WIFEXITED(statuses_[k]) && WEXITSTATUS(statuses_[k]) == 0))
        out.push_back("worker process " + std::to_string(pids_[k]) + ": " + describe_status(statuses_[k]));
    return out;
  }
  void JoinAll() {
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }
  int size() const { return n_; }
  const WorkerResult& result(int i) const { return b_.w[i]; }

 private:
  const Env& env_;
  Board& b_;
  int n_ = 0;
  std::vector<pid_t> pids_;
  std::vector<bool> reaped_;
  std::vector<int> statuses_;
  std::vector<std::thread> threads_;
};

struct Totals {
  long writes = 0, accepted = 0, refusals = 0, refused = 0, dups = 0, unexpected = 0, reads = 0, preads = 0,
       read_errors = 0, bad_texts = 0;
  std::vector<std::string> problems;  // "worker i: ..."
  void add(const WorkerResult& r, int i, std::int64_t before_ns = INT64_MAX) {
    writes += r.writes;
    accepted += r.accepted;
    refusals += r.refusals;
    refused += r.refused;
    dups += r.dups;
    unexpected += r.unexpected;
    reads += r.reads;
    preads += r.preads;
    read_errors += r.read_errors;
    bad_texts += r.bad_texts;
    for (int k = 0; k < std::min(r.nproblems, kMaxProblems); ++k)
      if (r.problem_at[k] < before_ns) problems.push_back("worker " + std::to_string(i) + ": " + r.problems[k]);
    if (r.nproblems > kMaxProblems && before_ns == INT64_MAX)
      problems.push_back("worker " + std::to_string(i) + ": ... " + std::to_string(r.nproblems - kMaxProblems) +
                         " more");
  }
  std::string line() const {
    std::ostringstream o;
    o << "writes tried " << writes + refusals << " (valid " << writes << ": accepted " << accepted << "; to be refused "
      << refusals << ": refused as expected " << refused << ", of them duplicate or glob "
      << "triggers (EEXIST) " << dups << "); unexpected results " << unexpected << "; reads " << reads << ", preads "
      << preads << " (failed " << read_errors << ", malformed " << bad_texts << ")";
    return o.str();
  }
  // The same for a run that ends with the daemon stopped: calls after the
  // signal fail, and count among the other results.
  std::string signal_line() const {
    std::ostringstream o;
    o << "writes tried " << writes + refusals << " (valid " << writes << ": accepted " << accepted << "; to be refused "
      << refusals << ": refused as expected " << refused << ", of them EEXIST " << dups << "); other results "
      << unexpected << " (calls after the signal fail); reads " << reads << ", preads " << preads;
    return o.str();
  }
};

// The values a slot may end with: those of accepted writes that no other
// accepted write began after (writes that overlap the last ones may land in
// either order). -1 stands for "never written".
std::set<int> final_candidates(const std::vector<WriteRec>& accepted);

std::string read_header(const std::string& inst);

// Everything the Env names exists on this kernel.
std::string missing_events();

// ---------------------------------------------------------------------------
// 1. Many writers and readers at once.

}  // namespace eventfs_it::fault
