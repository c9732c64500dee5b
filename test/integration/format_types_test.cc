// types/: every named type of the stable formats and of `header`, as the
// formats themselves give it, and enumerations whose maps are the running
// kernel's own print fmt tables.
#include "support/mounted_eventfs.h"
#include "support/sched_switch.h"

namespace eventfs_it {
namespace {

// The integer values a named type must carry, from one format line.
std::map<std::string, std::string> integer_keys(const FormatLine& f) {
  return {{"size", std::to_string(f.bits)},
          {"signed", f.is_signed ? "true" : "false"},
          {"align", std::to_string(f.align)}};
}

std::map<std::string, std::string> with_parent(std::map<std::string, std::string> keys, const char* parent) {
  keys["parent"] = parent;
  return keys;
}

// `header`'s two layouts, without its comment lines and section names.
std::vector<FormatLine> header_lines(const std::string& text) {
  std::string fields;
  for (const auto& line : split_lines(text))
    if (!line.empty() && line[0] == '\t') fields += line + "\n";
  return parse_format(fields);
}

TEST(Types, EveryTypeOfTheFormatsAndTheHeaderHasAFileThatAgreesWithThem) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  std::map<std::string, std::map<std::string, std::string>> want;     // type -> keys
  std::map<std::string, std::map<std::string, std::string>> field_of;  // "event.field" -> keys
  auto note = [&](const FormatLine& f, const std::string& where) {
    auto keys = integer_keys(f);
    auto [it, fresh] = want.emplace(f.type, keys);
    EXPECT_EQ(it->second, keys) << where << ": type " << f.type << " differs between two formats";
    field_of[where] = keys;
  };
  for (const auto& f : header_lines(slurp(m / "header"))) note(f, "header." + f.name);
  auto events = split_lines(slurp(m / "available_events"));
  ASSERT_GE(events.size(), 15u);
  for (const auto& ev : events)
    for (const auto& f : parse_format(slurp(m / (ev + "/format")))) note(f, ev + "." + f.name);
  ASSERT_TRUE(want.count("u16") && want.count("pid_t") && want.count("char")) << "header and sched_switch types";

  std::set<std::string> enums;
  for (const auto& name : list_dir(m / "types")) {
    std::vector<std::string> bad;
    NamedType t = parse_named_type(slurp(m / ("types/" + name)), &bad);
    EXPECT_TRUE(bad.empty()) << name << ": " << join(bad);
    if (t.keys["parent"] == "enum") {
      enums.insert(name);
      EXPECT_FALSE(t.fields.empty()) << name;
      for (const auto& f : t.fields) {
        ASSERT_TRUE(field_of.count(f)) << name << " names " << f << ", no field of a stable format";
        EXPECT_EQ(t.keys, with_parent(field_of[f], "enum")) << name << " over " << f;
      }
      continue;
    }
    ASSERT_TRUE(want.count(name)) << "types/" << name << " is no type of a format";
    EXPECT_EQ(t.keys, with_parent(want[name], "integer")) << name;
    EXPECT_TRUE(t.map.empty() && t.fields.empty()) << name;
  }
  const auto listed = list_dir(m / "types");
  for (const auto& [name, keys] : want)
    EXPECT_EQ(std::count(listed.begin(), listed.end(), name), 1) << "no types/" << name;
  EXPECT_EQ(enums, (std::set<std::string>{"softirq_vec", "task_state"}));
}

TEST(Types, EnumerationMapsAreTheRunningKernelsTables) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  // softirq_entry's vector: __print_symbolic(REC->vec, { 0, "HI" }, ...).
  const std::string softirq = slurp(std::string(kLiveTracefs) + "/events/irq/softirq_entry/format");
  auto symbols = print_symbolic_table(softirq, "vec");
  ASSERT_GE(symbols.size(), 10u) << softirq;
  NamedType vec = parse_named_type(slurp(m / "types/softirq_vec"));
  EXPECT_EQ(vec.map, symbols);
  EXPECT_EQ(vec.fields, (std::vector<std::string>{"softirq_entry.vec", "softirq_exit.vec"}));

  // sched_switch's state: 'R', then each letter of the __print_flags table,
  // valued as the letter a prev_state field holds.
  const std::string sw = slurp(std::string(kLiveTracefs) + "/events/sched/sched_switch/format");
  auto letters = stream::task_state_table(sw);
  ASSERT_GE(letters.size(), 7u) << sw;
  std::vector<std::pair<long long, std::string>> states{{'R', "R"}};
  for (const auto& [bit, letter] : letters) states.emplace_back(letter, std::string(1, letter));
  NamedType state = parse_named_type(slurp(m / "types/task_state"));
  EXPECT_EQ(state.map, states);
  EXPECT_EQ(state.fields, std::vector<std::string>{"sched_switch.prev_state"});
  // The format still says char: the RFC's golden text does not change.
  EXPECT_EQ(slurp(m / "sched_switch/format"), kGoldenSchedSwitch);
}

TEST(Types, AnOldKernelThatPrintedEnumNamesGivesAnEmptyMap) {
  EVENTFS_REQUIRE_ROOT();
  MountedEventfs m({"-o", "tracefs=" + fixture("linux-2.6.36")});
  ASSERT_TRUE(m.Start());
  std::vector<std::string> bad;
  NamedType vec = parse_named_type(slurp(m / "types/softirq_vec"), &bad);
  EXPECT_TRUE(bad.empty()) << join(bad);
  EXPECT_EQ(vec.keys["parent"], "enum");
  EXPECT_TRUE(vec.map.empty()) << "2.6.36 printed HI_SOFTIRQ, not its value";
  EXPECT_EQ(vec.fields.size(), 2u);
}

}  // namespace
}  // namespace eventfs_it
