// The text a trace.dat carries to describe its pages and events, in the
// kernel's format language (what tracefs's events/header_page,
// events/header_event and events/<system>/<event>/format say), made from
// the stable formats the mount gives: each stable event is an event of the
// system "eventfs" whose fields are the kernel's four common fields, then
// the stable fields, shifted by their 8 bytes; its print fmt names every
// field, an enum's value through __print_symbolic() with the labels of
// types/. common_type is 16 bits wide: ids that do not fit are mapped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "error/result.h"
#include "recorder/mount_layout.h"

namespace eventfs::recorder {

// The system name of the stable events in a trace.dat.
inline constexpr const char* kDatSystem = "eventfs";
// The bytes of common fields before the stable payload of an event.
inline constexpr std::size_t kDatCommonSize = 8;

// header_page of pages of `page_size` bytes with the host's long.
std::string dat_header_page(std::size_t page_size);
// header_event: the event headers of ring_page.h.
std::string dat_header_event();

// Each chosen event's common_type: its stable id where that fits in 16 bits
// (and is not 0), else the highest id from 65535 down that no event has.
// EOVERFLOW when they cannot all have one.
Result<std::map<std::uint32_t, std::uint16_t>> dat_event_ids(const MountLayout& layout);

// The format text of `e` under common_type `id`.
std::string dat_event_format(const MountLayout& layout, const Event& e, std::uint16_t id);

}  // namespace eventfs::recorder
