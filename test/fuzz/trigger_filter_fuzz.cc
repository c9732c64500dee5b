// Fuzzes the control files' grammars with one text: parse_trigger() and
// parse_triggers() (several commands in one write) in both
// target styles (stable and raw trigger files), translate_filter() with the
// field maps of real bindings (fixture kernels; one with a task_state()
// field, one whose stable names differ from the raw ones) and
// rename_filter_fields() back, available_triggers_from() and
// ErrorLog::parse_last() as if the text were a trigger file and the kernel's
// error_log.
//
// Checked besides the sanitizers: every position returned lies within the
// text and points at the piece it names; a parsed trigger's kernel text
// parses back to the same trigger; a translation changes only what its
// spans say and maps raw positions back into the stable text; an error_log
// entry eventfs writes parses back to its message, command and caret.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "support/fixture_kernels.h"
#include "control/error_log.h"
#include "control/filter.h"
#include "control/stable_names.h"
#include "control/trigger.h"
#include "control/variables.h"

namespace eventfs {
namespace {

// The controller refuses a write of a page (4096 bytes) or more before it
// parses it, as the kernel does.
constexpr std::size_t kMaxInput = 4095;

#define FUZZ_CHECK(cond)                                                                  \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);       \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)

// A stable event whose stable names are not the raw ones, and a task state.
constexpr const char* kRenamingCatalog = R"(
STABLE_EVENT(fuzz_switch, sched:sched_switch,
	__array(char,  comm, 16)   = next_comm
	__field(pid_t, pid)        = next_pid
	__field(char,  state)      = task_state(prev_state)
	__field(int,   prio)       = prev_prio | next_prio
)
)";

// The controller's own view of a stable event: its fields' renaming both ways.
using FieldMaps = StableNames;

FieldMaps maps_of(const Binding& b) { return stable_names_of(b); }

const std::vector<FieldMaps>& all_maps() {
  static const std::vector<FieldMaps> maps = [] {
    std::vector<FieldMaps> v;
    // sched_switch on 6.18 (state bits S=1 D=2 ...) and on the 32-bit kernel
    // (another table), from the builtin catalog.
    for (const char* kernel : {"linux-6.18", "linux-32bit-alt"}) {
      testing::ResolvedFixture fx(kernel);
      const Binding* b = fx.binding("sched_switch");
      FUZZ_CHECK(b);
      v.push_back(maps_of(*b));
    }
    Catalog c;
    FUZZ_CHECK(parse_catalog(kRenamingCatalog, "fuzz.catalog", c));
    testing::ResolvedFixture fx("linux-6.18", c);
    const Binding* b = fx.binding("fuzz_switch");
    FUZZ_CHECK(b);
    v.push_back(maps_of(*b));
    return v;
  }();
  return maps;
}

bool names(std::string_view text, std::size_t pos, const std::string& piece) {
  return pos <= text.size() && text.substr(pos, piece.size()) == piece;
}

void check_trigger(std::string_view text, TargetStyle style) {
  auto parsed = parse_trigger(text, style);
  if (!parsed) {
    FUZZ_CHECK(!parsed.error().message.empty());
    FUZZ_CHECK(parsed.error().pos <= text.size());
    return;
  }
  const TriggerCommand& t = *parsed;
  FUZZ_CHECK(!t.command.empty() && names(text, t.command_pos, t.command));
  if (t.remove) FUZZ_CHECK(t.command_pos > 0 && text[t.command_pos - 1] == '!');
  if (t.takes_target()) FUZZ_CHECK(!t.target.empty());
  if (!t.target.empty()) FUZZ_CHECK(names(text, t.target_pos, t.target));
  if (t.count) FUZZ_CHECK(names(text, t.count_pos, *t.count));
  if (t.has_filter) FUZZ_CHECK(!t.filter.empty() && names(text, t.filter_pos, t.filter));
  else FUZZ_CHECK(t.filter.empty());

  // What the kernel would be given, with the names as they are, reads back
  // as the same trigger (hist keeps its own key=value text, which the kernel
  // checks, and is given as written; save: is eventfs's own and never goes to
  // the kernel: its NAME=FIELD is the target, split at the first '=').
  if (t.is_save()) {
    const auto eq = t.target.find('=');
    FUZZ_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < t.target.size());
    FUZZ_CHECK(t.save_variable() == t.target.substr(0, eq));
  } else if (t.command != "hist") {
    const std::string again_text = t.kernel_text(t.target, t.filter);
    auto reparsed = parse_trigger(again_text, style);
    FUZZ_CHECK(reparsed);
    const TriggerCommand& again = *reparsed;
    FUZZ_CHECK(again.remove == t.remove && again.command == t.command && again.target == t.target);
    FUZZ_CHECK(again.count == t.count && again.has_filter == t.has_filter && again.filter == t.filter);
  }
}

// Several commands in one write: each names its pieces where they stand in
// the text (a newline inside a command is white space, as the parser sees
// it), commands come in text order, and each alone parses the same.
void check_triggers(std::string_view text, TargetStyle style) {
  auto parsed = parse_triggers(text, style);
  if (!parsed) {
    FUZZ_CHECK(!parsed.error().message.empty());
    FUZZ_CHECK(parsed.error().pos <= text.size());
    return;
  }
  const std::vector<TriggerCommand>& all = *parsed;
  FUZZ_CHECK(!all.empty());
  std::string flat(text);
  for (char& c : flat)
    if (c == '\n') c = ' ';
  std::size_t last = 0;
  for (const TriggerCommand& t : all) {
    FUZZ_CHECK(names(flat, t.command_pos, t.command));
    FUZZ_CHECK(t.command_pos >= last);
    last = t.command_pos;
    if (!t.target.empty() && t.command != "hist") FUZZ_CHECK(t.target_pos <= flat.size());
    if (t.count) FUZZ_CHECK(names(flat, t.count_pos, *t.count));
    if (t.has_filter) FUZZ_CHECK(names(flat, t.filter_pos, t.filter));
    auto reparsed = parse_trigger(t.source, style);
    FUZZ_CHECK(reparsed);
    const TriggerCommand& alone = *reparsed;
    FUZZ_CHECK(alone.command == t.command && alone.target == t.target && alone.count == t.count);
    FUZZ_CHECK(alone.filter == t.filter && alone.remove == t.remove);
  }
}

void check_filter(std::string_view stable, const FieldMaps& m) {
  auto translated = translate_filter(stable, m.fields);
  if (!translated) {
    FUZZ_CHECK(!translated.error().message.empty());
    FUZZ_CHECK(translated.error().pos <= stable.size());
    return;
  }
  const TranslatedFilter& tf = *translated;
  // Only the spans changed: putting their stable text back gives the
  // stable text, and a raw position outside them maps to the same byte.
  std::string back;
  std::size_t raw_at = 0, stable_at = 0;
  for (const auto& s : tf.spans) {
    FUZZ_CHECK(s.raw_pos >= raw_at && s.raw_pos + s.raw_len <= tf.raw.size());
    FUZZ_CHECK(s.stable_pos >= stable_at && s.stable_pos + s.stable_len <= stable.size());
    back.append(tf.raw, raw_at, s.raw_pos - raw_at);
    back.append(stable.substr(s.stable_pos, s.stable_len));
    raw_at = s.raw_pos + s.raw_len;
    stable_at = s.stable_pos + s.stable_len;
  }
  back.append(tf.raw, raw_at);
  FUZZ_CHECK(back == stable);
  // Positions at the start, the end and either side of each span's edges
  // (stable_pos_of() is linear in the spans: every position would make a
  // long filter quadratic).
  std::vector<std::size_t> probes = {0, tf.raw.size()};
  for (const auto& s : tf.spans)
    for (std::size_t r : {s.raw_pos, s.raw_pos + s.raw_len}) {
      probes.push_back(r);
      if (r > 0) probes.push_back(r - 1);
      if (r < tf.raw.size()) probes.push_back(r + 1);
    }
  for (std::size_t r : probes) {
    const TranslatedFilter::Span* in = nullptr;
    for (const auto& s : tf.spans)
      if (r >= s.raw_pos && r < s.raw_pos + s.raw_len) in = &s;
    const std::size_t p = tf.stable_pos_of(r);
    FUZZ_CHECK(p <= stable.size());
    if (in) FUZZ_CHECK(p == in->stable_pos);
    else if (r < tf.raw.size()) FUZZ_CHECK(stable[p] == tf.raw[r]);
    else FUZZ_CHECK(p == stable.size());
  }
  rename_filter_fields(tf.raw, m.raw_to_stable);
}

// Variables in a filter: a value naming one becomes its value (a span that
// maps back to the name), or the whole filter kNeverFilter while it is unset;
// and the variables file's grammar.
void check_variables(std::string_view text, const FilterFieldMap* fields) {
  static const VariableValues vars = {{"v", 7}, {"w", std::nullopt}, {"neg", -5}};
  auto translated = translate_filter(text, fields, &vars);
  const TranslatedFilter& tf = translated ? *translated : TranslatedFilter{};
  if (!translated) {
    FUZZ_CHECK(!translated.error().message.empty() && translated.error().pos <= text.size());
  } else if (tf.unset_variable) {
    FUZZ_CHECK(tf.raw == kNeverFilter && tf.spans.empty() && tf.variables.count("w"));
  } else {
    std::string back;
    std::size_t raw_at = 0;
    for (const auto& s : tf.spans) {
      FUZZ_CHECK(s.raw_pos >= raw_at && s.raw_pos + s.raw_len <= tf.raw.size());
      back.append(tf.raw, raw_at, s.raw_pos - raw_at);
      back.append(text.substr(s.stable_pos, s.stable_len));
      raw_at = s.raw_pos + s.raw_len;
    }
    back.append(tf.raw, raw_at);
    FUZZ_CHECK(back == text);
    for (const auto& name : tf.variables) FUZZ_CHECK(vars.count(name));
  }
  if (!tf.variables.empty()) FUZZ_CHECK(names_a_variable(text, vars));
  if (auto changes = parse_variable_changes(text, {"prev_pid"})) {
    FUZZ_CHECK(!changes->empty());
    for (const auto& c : *changes) {
      FUZZ_CHECK(variable_name_problem(c.name, {"prev_pid"}).empty());
      FUZZ_CHECK((c.kind == VariableChange::Kind::Set) == c.value.has_value());
    }
    const VariableChange& first = changes->front();
    FUZZ_CHECK(variables_text({{first.name, first.value}}).find(first.name) == 0);
  } else {
    FUZZ_CHECK(!changes.error().message.empty() && changes.error().pos <= text.size());
  }
}

void check_error_log(std::string_view text) {
  std::string message, command;
  std::size_t caret = 0;
  const std::string log(text);
  if (ErrorLog::parse_last(log, message, command, caret)) {
    FUZZ_CHECK(log.find(message) != std::string::npos);
    FUZZ_CHECK(log.find(command) != std::string::npos);
    FUZZ_CHECK(caret < log.size());
  }
  // eventfs's own entries parse back: the first line of the text as the
  // message, the whole text as the command (control bytes escaped, so it
  // stays one line), a caret into it or past its end (shown at its end).
  const std::string first_line = log.substr(0, log.find('\n'));
  const std::size_t want_caret = text.size() / 2 + (text.empty() ? 0 : static_cast<unsigned char>(text[0]) % 4);
  ErrorLog mine;
  mine.add("sched_switch/trigger", first_line, log, want_caret);
  FUZZ_CHECK(ErrorLog::parse_last(mine.text(), message, command, caret));
  FUZZ_CHECK(message == first_line);
  FUZZ_CHECK(command.size() >= log.size() && command.find('\n') == std::string::npos);
  FUZZ_CHECK(caret == std::min(want_caret, command.size()));
  mine.add_failure("per_cpu/cpu0/trace_pipe_raw", first_line);
  FUZZ_CHECK(ErrorLog::parse_last(mine.text(), message, command, caret));
  FUZZ_CHECK(message == first_line && command.empty() && caret == 0);
}

}  // namespace
}  // namespace eventfs

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace eventfs;
  if (size > kMaxInput) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  check_trigger(text, TargetStyle::Stable);
  check_trigger(text, TargetStyle::Raw);
  check_triggers(text, TargetStyle::Stable);
  check_triggers(text, TargetStyle::Raw);
  check_variables(text, nullptr);
  for (const FieldMaps& m : all_maps()) {
    check_filter(text, m);
    check_variables(text, &m.fields);
    // The filter of a trigger, as the controller translates it.
    if (auto t = parse_trigger(text, TargetStyle::Stable); t && t->has_filter) check_filter(t->filter, m);
    rename_filter_fields(text, m.raw_to_stable);
  }
  FUZZ_CHECK(rename_filter_fields(text, {}) == text);

  for (const std::string& w : available_triggers_from(text)) {
    FUZZ_CHECK(!w.empty());
    for (char c : w) FUZZ_CHECK(c != ' ' && c != '\t' && c != '\n');
  }
  check_error_log(text);
  return 0;
}
