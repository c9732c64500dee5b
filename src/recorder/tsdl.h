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
//   each event:     timestamp u64, id u32 (header), pid s32 (context),
//                   then the stable payload as eventfs streams it: 16 bytes
//                   from an 8-aligned start, so the payload starts 8-aligned
//                   and its fields, declared with their own alignment, fall at
//                   the offsets the stable layout gives them.
constexpr std::uint32_t kCtfMagic = 0xC1FC1FC1u;
constexpr std::size_t kPacketHeaderSize = 8;
constexpr std::size_t kPacketContextSize = 44;
constexpr std::size_t kFirstEventOffset = 56;  // 52 rounded up to the event header's 8
constexpr std::size_t kEventHeadSize = 16;     // timestamp, id, pid

// A TSDL identifier made from a name (the clock's, say): [A-Za-z0-9_], not
// starting with a digit.
std::string tsdl_identifier(const std::string& name);

// The metadata; `offset` puts the trace clock's zero in real time.
std::string tsdl_metadata(const MountLayout& layout, const std::string& hostname, const ClockOffset& offset);

}  // namespace eventfs::recorder
