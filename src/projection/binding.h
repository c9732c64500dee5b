// Binding: which raw event and raw fields supply a stable event on this
// kernel, and how each value is converted. Computed once at mount; the
// projection (record path) and the control translation both use it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "error/result.h"
#include "format/named_types.h"
#include "format/raw_event.h"
#include "format/stable_layout.h"

namespace eventfs {

enum class Conversion {
  Integer,       // scalar -> scalar, widened or narrowed with the raw sign
  IntegerArray,  // fixed or dynamic array of integers -> fixed array
  Bytes,         // char array, __data_loc/__rel_loc string or tail -> char[N]
  TaskState,     // raw state bits -> one letter from the raw __print_flags table
};

struct FieldBinding {
  const StableField* stable = nullptr;
  Conversion conversion = Conversion::Integer;
  RawField raw;         // the raw field chosen
  FieldSlot slot;       // where it goes in the stable record
  FlagTable states;     // TaskState only: the raw event's table
};

struct Binding {
  const StableEvent* event = nullptr;
  RawEvent raw;  // the raw event chosen
  std::vector<FieldBinding> fields;
  RecordLayout layout;
};

// Looks a raw event up: the event (never null), or why it cannot supply one.
using RawEventLookup = std::function<Result<const RawEvent*>(const RawEventName&)>;

// Binds one stable event, trying its raw sources in order. On failure the
// first source's reason, one line (for unavailable_events).
Result<Binding> bind_stable_event(const StableEvent& ev, const RawEventLookup& lookup);

struct Resolution {
  std::vector<Binding> available;                              // catalog order
  std::vector<std::pair<std::string, std::string>> unavailable;  // name, reason
};

Resolution resolve_catalog(const Catalog& catalog, const RawEventLookup& lookup);

// Every stable field of the available events with its named type, and for an
// __enum field its map from the bound raw event's print fmt (empty when the
// raw event has no table for the field).
std::vector<TypeUse> type_uses(const Resolution& resolution);

}  // namespace eventfs
