// sched_switch traffic (ping-pong threads) and an independent libtraceevent reader of a second instance.
#include "support/sched_switch.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <traceevent/event-parse.h>
extern "C" {  // kbuffer.h has no extern "C" of its own
#include <traceevent/kbuffer.h>
}

namespace eventfs_it::stream {

PingPongResult ping_pong(int rounds, int cpu, const char* ping_name,
                         const char* pong_name) {
  PingPongResult res;
  char creator[17] = {};
  ::prctl(PR_GET_NAME, creator, 0, 0, 0);
  res.parent_comm = creator;
  int a[2], b[2];
  if (::pipe2(a, O_CLOEXEC) != 0) return res;
  if (::pipe2(b, O_CLOEXEC) != 0) {
    ::close(a[0]);
    ::close(a[1]);
    return res;
  }
  std::atomic<pid_t> ping_tid{0}, pong_tid{0};
  std::atomic<int> done{0};
  std::thread pong([&] {
    ::prctl(PR_SET_NAME, pong_name, 0, 0, 0);
    if (cpu >= 0) pin_current_thread(cpu);
    pong_tid = current_tid();
    char c;
    for (int i = 0; i < rounds; ++i) {
      if (::read(a[0], &c, 1) != 1) break;
      if (::write(b[1], &c, 1) != 1) break;
    }
  });
  std::thread ping([&] {
    ::prctl(PR_SET_NAME, ping_name, 0, 0, 0);
    if (cpu >= 0) pin_current_thread(cpu);
    ping_tid = current_tid();
    char c = 'x';
    int i = 0;
    for (; i < rounds; ++i) {
      if (::write(a[1], &c, 1) != 1) break;
      if (::read(b[0], &c, 1) != 1) break;
    }
    done = i;
  });
  ping.join();
  pong.join();
  for (int fd : {a[0], a[1], b[0], b[1]}) ::close(fd);
  res.ping = ping_tid;
  res.pong = pong_tid;
  res.rounds_done = done;
  return res;
}

SwitchKey key_of(const Switch& s) { return {s.cpu, s.prev_pid, s.prev_comm, s.prev_state, s.next_pid, s.next_comm}; }

namespace {

std::string describe_key(const SwitchKey& k) {
  std::ostringstream o;
  o << "cpu" << std::get<0>(k) << " " << std::get<2>(k) << ":" << std::get<1>(k) << " [" << std::get<3>(k) << "] -> "
    << std::get<5>(k) << ":" << std::get<4>(k);
  return o.str();
}

int count_of(const SwitchCounts& m, const SwitchKey& k) {
  auto it = m.find(k);
  return it == m.end() ? 0 : it->second;
}

}  // namespace

std::string compare_instances(const SwitchCounts& got, const SwitchCounts& want, bool state_may_race,
                              int* state_races) {
  if (state_races) *state_races = 0;
  if (got == want) return "";
  std::set<SwitchKey> keys;
  for (const auto& [k, n] : got) keys.insert(k);
  for (const auto& [k, n] : want) keys.insert(k);
  std::ostringstream diff;
  int shown = 0;
  // The same switch with its state left out -> how many more of each state
  // eventfs has than the reference (negative: fewer).
  std::map<SwitchKey, std::map<char, int>> by_switch;
  for (const auto& k : keys) {
    const int a = count_of(got, k), b = count_of(want, k);
    if (a == b) continue;
    if (shown++ < 20) diff << "\n  " << describe_key(k) << ": eventfs " << a << ", reference " << b;
    SwitchKey stateless = k;
    std::get<3>(stateless) = 0;
    by_switch[stateless][std::get<3>(k)] += a - b;
  }
  if (shown > 20) diff << "\n  ... " << shown - 20 << " more";
  bool raced_only = state_may_race;
  int races = 0;
  for (const auto& [sw, states] : by_switch) {
    int sum = 0, running_extra = 0, running_fewer = 0, sleeping_extra = 0, sleeping_fewer = 0;
    for (const auto& [state, d] : states) {
      sum += d;
      int& extra = state == 'R' ? running_extra : sleeping_extra;
      int& fewer = state == 'R' ? running_fewer : sleeping_fewer;
      if (state != 'R' && state != 'S' && state != 'D') raced_only = false;
      (d > 0 ? extra : fewer) += d > 0 ? d : -d;
    }
    // Every state eventfs has in excess pairs with one the reference has,
    // and one of each pair is R.
    if (sum != 0 || sleeping_extra > running_fewer || sleeping_fewer > running_extra) raced_only = false;
    races += running_extra + sleeping_extra;
  }
  if (raced_only) {
    if (state_races) *state_races = races;
    return "";
  }
  return diff.str();
}

bool parse_switch_line(const std::string& line, Switch& out) {
  static const std::regex re(
      "^(.*)-(-?\\d+) \\[(\\d{3})\\] \\d+\\.\\d{6}: sched_switch: prev_comm=(.*) prev_pid=(-?\\d+) "
      "prev_state=(.?) next_comm=(.*) next_pid=(-?\\d+)$");
  std::smatch m;
  if (!std::regex_match(line, m, re)) return false;
  out.task = m[1];
  out.common_pid = std::stoi(m[2]);
  out.cpu = std::stoi(m[3]);
  out.prev_comm = m[4];
  out.prev_pid = std::stoi(m[5]);
  out.prev_state = m[6].length() ? m[6].str()[0] : 0;
  out.next_comm = m[7];
  out.next_pid = std::stoi(m[8]);
  return true;
}

bool parse_switch_info(const std::string& info, Switch& out) {
  static const std::regex re("^prev_comm=(.*) prev_pid=(-?\\d+) prev_state=(\\S) next_comm=(.*) next_pid=(-?\\d+)$");
  std::smatch m;
  if (!std::regex_match(info, m, re)) return false;
  out.prev_comm = m[1];
  out.prev_pid = std::stoi(m[2]);
  out.prev_state = m[3].str()[0];
  out.next_comm = m[4];
  out.next_pid = std::stoi(m[5]);
  return true;
}

bool parse_switch_payload(const std::string& p, Switch& out) {
  if (p.size() < 44) return false;
  auto text = [&](std::size_t off, std::size_t n) {
    std::size_t len = 0;
    while (len < n && p[off + len]) ++len;
    return p.substr(off, len);
  };
  out.prev_comm = text(0, 16);
  std::int32_t v;
  std::memcpy(&v, p.data() + 16, 4);
  out.prev_pid = v;
  out.prev_state = p[20];
  out.next_comm = text(21, 16);
  std::memcpy(&v, p.data() + 40, 4);
  out.next_pid = v;
  return true;
}

std::vector<std::pair<unsigned long long, char>> task_state_table(const std::string& format) {
  std::vector<std::pair<unsigned long long, char>> out;
  auto at = format.find("__print_flags(");
  if (at == std::string::npos) return out;
  static const std::regex re("\\{ *(0x[0-9a-fA-F]+|\\d+) *, *\"([^\"]*)\" *\\}");
  std::string rest = format.substr(at);
  for (auto it = std::sregex_iterator(rest.begin(), rest.end(), re); it != std::sregex_iterator(); ++it) {
    std::string letters = (*it)[2];
    if (letters.empty()) continue;
    out.emplace_back(std::stoull((*it)[1], nullptr, 0), letters[0]);
  }
  return out;
}

char task_state_letter(const std::vector<std::pair<unsigned long long, char>>& table,
                       unsigned long long state) {
  for (const auto& [bit, letter] : table)
    if (state & bit) return letter;
  return 'R';
}

ReferenceRead read_reference_switches(const std::string& inst, int cpus) {
  ReferenceRead res;
  std::string format = slurp(inst + "/events/sched/sched_switch/format");
  auto table = task_state_table(format);
  if (table.empty()) {
    res.error = "no __print_flags table in " + inst + "/events/sched/sched_switch/format";
    return res;
  }
  tep_handle* tep = tep_alloc();
  tep_event* ev = nullptr;
  if (tep_parse_format(tep, &ev, format.data(), format.size(), "sched") != 0 || !ev) {
    res.error = "tep_parse_format failed on sched_switch's format";
    tep_free(tep);
    return res;
  }
  tep_format_field* f_prev_comm = tep_find_field(ev, "prev_comm");
  tep_format_field* f_prev_pid = tep_find_field(ev, "prev_pid");
  tep_format_field* f_prev_state = tep_find_field(ev, "prev_state");
  tep_format_field* f_next_comm = tep_find_field(ev, "next_comm");
  tep_format_field* f_next_pid = tep_find_field(ev, "next_pid");
  tep_format_field* f_common_pid = tep_find_common_field(ev, "common_pid");
  if (!f_prev_comm || !f_prev_pid || !f_prev_state || !f_next_comm || !f_next_pid || !f_common_pid) {
    res.error = "sched_switch's format lacks a field";
    tep_free(tep);
    return res;
  }
  long kb = std::strtol(slurp(inst + "/buffer_subbuf_size_kb").c_str(), nullptr, 10);
  std::size_t subbuf = kb > 0 ? static_cast<std::size_t>(kb) * 1024 : static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<char> page(subbuf);
  kbuffer* kbuf = kbuffer_alloc(KBUFFER_LSIZE_SAME_AS_HOST, KBUFFER_ENDIAN_SAME_AS_HOST);
  auto comm = [](const tep_format_field* f, const void* data) {
    const char* p = static_cast<const char*>(data) + f->offset;
    std::size_t len = 0;
    while (len < static_cast<std::size_t>(f->size) && p[len]) ++len;
    return std::string(p, len);
  };
  for (int cpu = 0; cpu < cpus && res.error.empty(); ++cpu) {
    std::string path = inst + "/per_cpu/cpu" + std::to_string(cpu) + "/trace_pipe_raw";
    int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      res.error = "open " + path + ": " + std::strerror(errno);
      break;
    }
    for (;;) {
      ssize_t n = ::read(fd, page.data(), page.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) break;
      if (n < 0) {
        res.error = "read " + path + ": " + std::strerror(errno);
        break;
      }
      if (n == 0) break;
      if (kbuffer_load_subbuffer(kbuf, page.data()) != 0) {
        res.error = "kbuffer_load_subbuffer failed on " + path;
        break;
      }
      ++res.subbufs;
      if (kbuffer_missed_events(kbuf) != 0) ++res.missed;
      unsigned long long ts = 0;
      for (void* data = kbuffer_read_event(kbuf, &ts); data; data = kbuffer_next_event(kbuf, &ts)) {
        std::uint16_t type;
        std::memcpy(&type, data, sizeof type);
        if (type != ev->id) continue;
        unsigned long long v = 0;
        Switch s;
        s.cpu = cpu;
        s.prev_comm = comm(f_prev_comm, data);
        s.next_comm = comm(f_next_comm, data);
        tep_read_number_field(f_prev_pid, data, &v);
        s.prev_pid = static_cast<pid_t>(v);
        tep_read_number_field(f_next_pid, data, &v);
        s.next_pid = static_cast<pid_t>(v);
        tep_read_number_field(f_common_pid, data, &v);
        s.common_pid = static_cast<pid_t>(v);
        tep_read_number_field(f_prev_state, data, &v);
        s.prev_state = task_state_letter(table, v);
        res.switches.push_back(std::move(s));
      }
    }
    ::close(fd);
  }
  kbuffer_free(kbuf);
  tep_free(tep);
  return res;
}

RefInstance::RefInstance() {
  name_ = "eventfs-it-ref-" + std::to_string(::getpid());
  owner_dir_ = std::string(kTempPrefix) + "ref-" + std::to_string(::getpid());
  path_ = instance_dir(name_);
  ::mkdir(owner_dir_.c_str(), 0755);
  write_text_file(owner_dir_ + "/owner", owner_line());
  if (exists(path_)) Remove();  // a leftover of this pid's earlier test
  if (::mkdir(path_.c_str(), 0755) != 0) error_ = "mkdir " + path_ + ": " + std::strerror(errno);
}

RefInstance::~RefInstance() {
  Remove();
  ::unlink((owner_dir_ + "/owner").c_str());
  ::rmdir(owner_dir_.c_str());
}

void RefInstance::Remove() {
  write_once(path_ + "/events/enable", "0");
  wait_until([&] { return ::rmdir(path_.c_str()) == 0 || errno == ENOENT; }, 2s);
}

}  // namespace eventfs_it::stream
