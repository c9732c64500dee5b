// The stable catalog: what each stable event promises (its fields and their
// types) and where the values come from in the kernel's raw events.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/format_text.h"

namespace eventfs {

// Where one stable field's value comes from: a raw field, or a conversion of
// one. `common_pid` and the other common fields are ordinary raw fields here.
struct FieldSource {
  enum class Kind { Field, TaskState };
  Kind kind = Kind::Field;
  std::string raw_field;
  bool operator==(const FieldSource&) const = default;
};

struct StableField {
  FormatField decl;                  // Scalar or Array; type from the stable side only
  std::string enum_name;             // __enum: the named enumeration over decl.type (types/)
  std::vector<FieldSource> sources;  // alternatives, first that binds wins
  int line = 0;
};

struct RawEventName {
  std::string system;
  std::string event;
  bool operator==(const RawEventName&) const = default;
};

struct StableEvent {
  std::string name;
  std::uint32_t id = 0;
  bool explicit_id = false;
  std::vector<RawEventName> sources;  // alternatives, first that binds wins
  std::vector<StableField> fields;
  std::string file;
  int line = 0;

  std::vector<FormatField> format_fields() const;
};

struct Catalog {
  std::vector<StableEvent> events;
  const StableEvent* find(const std::string& name) const;
};

// The id of an event declared without one: a hash of its name with the top
// bit set, so it never collides with a small explicit id and never changes
// when other events are added or removed.
std::uint32_t derived_event_id(const std::string& name);

}  // namespace eventfs
