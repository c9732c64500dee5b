// The control-file load of the fault tests: threads and processes writing and
// reading the control files, and what the instance must hold afterwards.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

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
  // Every owner_present entry -1 (no owner of this worker).
  WorkerResult();
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

  // Records a problem (its text and time; the first kMaxProblems kept, all counted).
  void note(const std::string& p);
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
  // Maps an anonymous shared Board (ok() tells whether it worked).
  SharedBoard();
  // Destroys the Board and unmaps it.
  ~SharedBoard();
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
  // Stops every worker: kills and reaps the processes not yet reaped, joins the threads.
  ~Workers();
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  // Returns the worker's index in the board, or -1.
  int AddProcess(const Plan& plan);

  // A worker thread; returns its index in the board, or -1.
  int AddThread(const Plan& plan);

  // Starts every worker, to run for `duration` (or until Stop()).
  void Go(std::chrono::milliseconds duration);
  void Stop() { b_.stop = 1; }

  // Waits (bounded) for every worker, reaping the processes; names the ones
  // still running. Threads are joined once all are done.
  std::vector<std::string> Wait(std::chrono::milliseconds limit);
  // Processes that did not end normally.
  std::vector<std::string> BadExits() const;
  // Joins the worker threads that are still joinable.
  void JoinAll();
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
  // Adds worker i's counts, and its problems noted before `before_ns`
  // (with the count of those not kept, when there is no cut-off).
  void add(const WorkerResult& r, int i, std::int64_t before_ns = INT64_MAX);
  // The counts in one line, for a test's report.
  std::string line() const;
  // The same for a run that ends with the daemon stopped: calls after the
  // signal fail, and count among the other results.
  std::string signal_line() const;
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
