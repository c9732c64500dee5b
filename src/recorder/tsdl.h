// The CTF 1.8 metadata (TSDL text) of a recording, made from what the mount
// describes, and the binary layout of the packets stream_writer.cc writes.
#pragma once

#include <cstdint>
#include <string>

#include "recorder/mount_layout.h"
#include "recorder/trace_clock.h"

namespace eventfs::recorder {

// The packet layout the metadata declares; stream_writer.cc fills it.
//   packet header:  magic u32, stream_id u32                      (8 bytes)
//   packet context: timestamp_begin u64, timestamp_end u64, content_size u64,
//                   packet_size u64, events_discarded u64, cpu_id u32
//                                                                (44 bytes)
//   each event:     4-aligned: timestamp u32 (the clock's low 32 bits) and
//                   id u32 (header), pid s32 (context), then the stable
//                   payload at the alignment of its largest field, so its
//                   fields fall at the offsets the stable layout gives them,
//                   then zeros up to the next 4 bytes.
// A reader takes the clock's upper bits from the packet's 64-bit
// timestamp_begin and each event's 32 bits as they advance (adding 2^32
// where they go back), so an event more than 2^32 - 1 clock counts after
// the one before it starts a packet of its own.
constexpr std::uint32_t kCtfMagic = 0xC1FC1FC1u;
constexpr std::size_t kPacketHeaderSize = 8;
constexpr std::size_t kPacketContextSize = 44;
constexpr std::size_t kFirstEventOffset = 52;  // (already 4-aligned)
constexpr std::size_t kEventHeadSize = 12;     // timestamp, id, pid
constexpr std::uint64_t kEventClockSpan = std::uint64_t{1} << 32;  // what the 32 bits span

// A TSDL identifier made from a name (the clock's, say): [A-Za-z0-9_], not
// starting with a digit.
std::string tsdl_identifier(const std::string& name);

// The metadata; `offset` puts the trace clock's zero in real time.
std::string tsdl_metadata(const MountLayout& layout, const std::string& hostname, const ClockOffset& offset);

}  // namespace eventfs::recorder
