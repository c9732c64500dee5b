#!/usr/bin/env python3
"""Writes the seed corpora of the fuzzers into test/fuzz/corpus/<target>/.

  python3 test/fuzz/make_seeds.py

catalog/         the default catalog cut into pieces of a few events each,
                 some followed by a line "#record" and a raw record laid out
                 as linux-6.18's sched_switch, sched_migrate_task or print
trigger_filter/  trigger and filter lines of eventfs(5) and of the kernel's
                 Documentation/trace/events.rst, an error_log entry and the
                 head of a trigger file
subbuf_walk/     sub-buffers as the kernel writes them (4- and 8-byte longs):
                 events short and long, discarded events, time extends,
                 absolute time stamps, a padding to the end, lost events

The seeds are small and deterministic: running this again rewrites the same
files.
"""
import os
import re
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.normpath(os.path.join(HERE, "..", ".."))
CORPUS = os.path.join(HERE, "corpus")


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# --- catalog -----------------------------------------------------------------

RECORD = b"\n#record\n"  # the catalog fuzzer's mark: a record follows

def catalog_events():
    with open(os.path.join(TOP, "src", "catalog", "default.catalog")) as f:
        text = f.read()
    # Each event with the comment lines right before it.
    return re.findall(r"(?:#[^\n]*\n)*STABLE_EVENT\(.*?\n\)\n", text, re.S)


def sched_switch_record():
    """A raw sched_switch record as linux-6.18 lays it out (72 bytes)."""
    r = bytearray(64)
    struct.pack_into("<HBBi", r, 0, 372, 0, 1, 2012)  # common_type, flags, preempt_count, common_pid
    r[8:24] = b"bash".ljust(16, b"\0")                # prev_comm
    struct.pack_into("<iiq", r, 24, 2012, 120, 2)     # prev_pid, prev_prio, prev_state (D)
    r[40:56] = b"cc1plus".ljust(16, b"\0")            # next_comm
    struct.pack_into("<ii", r, 56, 20982, 120)        # next_pid, next_prio
    return bytes(r)


def migrate_task_record():
    """A raw sched_migrate_task record of linux-6.18: a __data_loc comm."""
    r = bytearray(28)
    struct.pack_into("<HBBi", r, 0, 371, 0, 0, 77)
    comm = b"kworker/0:1\0"
    struct.pack_into("<I", r, 8, (len(comm) << 16) | len(r))  # __data_loc: length << 16 | offset
    struct.pack_into("<iiii", r, 12, 77, 120, 0, 1)            # pid, prio, orig_cpu, dest_cpu
    return bytes(r) + comm


def make_catalog_seeds():
    events = catalog_events()
    assert len(events) >= 16, "default.catalog: fewer events than expected"
    by_name = {re.search(r"STABLE_EVENT\((\w+)", e).group(1): e for e in events}
    groups = [
        ("sched", ["sched_switch", "sched_migrate_task", "sched_wakeup"]),
        ("process", ["sched_process_fork", "sched_process_exec", "sched_process_exit"]),
        ("irq", ["irq_handler_entry", "irq_handler_exit", "softirq_entry", "softirq_exit"]),
        ("syscalls", ["sys_enter", "sys_exit"]),
        ("power", ["cpu_idle", "cpu_frequency"]),
        ("block", ["block_rq_issue", "block_rq_complete"]),
    ]
    for name, members in groups:
        write("catalog", name, "".join(by_name[m] for m in members))
    write("catalog", "sched_switch_record", by_name["sched_switch"].encode() + RECORD + sched_switch_record())
    write("catalog", "migrate_task_record",
          by_name["sched_migrate_task"].encode() + RECORD + migrate_task_record())
    # What the language allows beyond the default catalog: alternatives of
    # raw events and fields, derived ids, comments of every kind, widening.
    write("catalog", "language", """/* alternatives */ STABLE_EVENT(switch_any, sched:sched_switch | sched:sched_wakeup,
	__array(char, comm, 16) = next_comm | comm  // the first that binds
	__field(u64,  pid)      = next_pid | pid
	__field(char, state)    = task_state(prev_state) | common_flags
	__array(s16,  prios, 3) = prev_prio
)
STABLE_EVENT(print_text, ftrace:print, id=0x7fffffff,
	__array(char, buf, 200) = buf
	__field(s8,   ip)       = ip
)
""".encode() + RECORD + struct.pack("<HBBiQ", 5, 0, 0, 1, 0xffffffffffffffff) + b"hello, tail\n\0")


# --- trigger_filter ----------------------------------------------------------

TRIGGER_LINES = [
    # eventfs(5)
    "enable_event:sched_migrate_task if prev_state == 'D'\n",
    "enable_event:sched_migrate_task if prev_pid == 1",
    "stacktrace:5 if prev_state == 'D'",
    "!stacktrace",
    "!enable_event:sched_migrate_task",
    "enable_event:sched_*",
    "!enable_event:sched_*",
    "enable_event:block:*",
    "enable_event:sched:sched_migrate_task:unlimited if prev_pid == 1",
    "traceoff:count=5 if prev_pid == 1",
    # Documentation/trace/events.rst, "Event triggers"
    "enable_event:kmem:kmalloc:1",
    "disable_event:kmem:kmalloc",
    "traceoff",
    "traceon if prev_state == 'S'",
    "snapshot:1 if nr_rq > 1",
    "stacktrace:5 if bytes_req >= 65536",
    "hist:keys=call_site.sym:values=bytes_req:sort=bytes_req.descending",
    # filters (eventfs(5) and "Event filtering")
    "pid == 1 && COMM == \"bash\"",
    "((sig >= 10 && sig < 15) || sig == 17) && comm != bash",
    "prev_state == R || !(state != \"S\") && prio <= -3",
    "common_preempt_count > 4 && pid & 0x10 || comm ~ \"*sh\"",
    # an error_log entry, and the head of a trigger file
    "[ 1951.519513] sched_switch/trigger: error: Unknown command 'frobnicate'\n"
    "  Command: frobnicate\n"
    "           ^\n",
    "# Available triggers:\n"
    "# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist disable_hist hist\n",
]


def make_trigger_seeds():
    for i, line in enumerate(TRIGGER_LINES):
        write("trigger_filter", "%02d" % i, line)


# --- subbuf_walk -------------------------------------------------------------

class Subbuf:
    """A sub-buffer as the kernel fills one: u64 time stamp, a long commit
    word, events with 4-byte headers (type_len:5, time_delta:27)."""

    def __init__(self, long_size, ts, capacity):
        self.ls = long_size
        self.page = bytearray(capacity)
        struct.pack_into("<Q", self.page, 0, ts)
        self.at = 8 + long_size
        self.missed = 0

    def _u32(self, v):
        struct.pack_into("<I", self.page, self.at, v & 0xffffffff)
        self.at += 4

    def event(self, data, delta=0, big=False):
        n = (len(data) + 3) & ~3
        if not big and 0 < n <= 112:
            self._u32((n // 4) | (delta << 5))
        else:
            self._u32(0 | (delta << 5))
            self._u32(n + 4)
        self.page[self.at:self.at + len(data)] = data
        self.at += n
        return self

    def time_extend(self, delta):
        self._u32(30 | ((delta & ((1 << 27) - 1)) << 5))
        self._u32(delta >> 27)
        return self

    def time_stamp(self, ts):
        self._u32(31 | ((ts & ((1 << 27) - 1)) << 5))
        self._u32((ts >> 27) & 0xffffffff)
        return self

    def padding(self, length, delta=1):
        self._u32(29 | (delta << 5))
        self._u32(length + 4)
        self.at += length
        return self

    def build(self):
        size = self.at - 8 - self.ls
        commit = size
        if self.missed:
            commit |= 1 << 31
            if self.missed > 0:
                commit |= 1 << 30
                struct.pack_into("<Q" if self.ls == 8 else "<I", self.page, self.at, self.missed)
        struct.pack_into("<Q" if self.ls == 8 else "<I", self.page, 8, commit)
        return bytes(self.page)


def subbuf_input(long_size, step, cut_mask, page, commits=()):
    """The fuzzer's input: options, cut mask, commit words, the sub-buffer."""
    head = bytes([(1 if long_size == 4 else 0) | ((step - 1) << 1), cut_mask, len(commits)])
    return head + b"".join(struct.pack("<I", c) for c in commits) + page


def switch_payload(i):
    return sched_switch_record()[:60] + bytes([i])


def make_subbuf_seeds():
    for ls in (8, 4):
        # Records only, as a quiet CPU leaves them.
        b = Subbuf(ls, 5321000042123, 512)
        for i in range(5):
            b.event(switch_payload(i), delta=1000 * (i + 1))
        write("subbuf_walk", "records_%d" % ls, subbuf_input(ls, 2, 0x55, b.build()))
        # Every kind of header, and lost events before it (count stored).
        b = Subbuf(ls, 1000, 768)
        (b.event(b"\x01\0\0\0", 5).padding(8, 7).time_extend((3 << 27) + 2)
          .event(bytes(range(130)), 1, big=True).time_stamp(77).event(bytes(112), 0)
          .event(b"\x02\0\0\0\x09\0\0\0", 3))
        b.missed = 12
        write("subbuf_walk", "every_header_%d" % ls, subbuf_input(ls, 3, 0xff, b.build()))
        # A full sub-buffer: events, then a padding to its end; lost events
        # whose count the kernel did not store.
        b = Subbuf(ls, 0xf800000000000000 | 5, 256)
        b.time_stamp(9).event(b"abcdefgh", 2).event(b"ijklmnop", 2)
        b.padding(256 - b.at - 8 - 8)
        b.missed = -1
        write("subbuf_walk", "padded_%d" % ls, subbuf_input(ls, 1, 0xaa, b.build()))
    # A writer's sub-buffer seen at three commits, the last with flags.
    b = Subbuf(8, 77, 256)
    for i in range(3):
        b.event(bytes([i]) * 12, i)
    write("subbuf_walk", "commits_8", subbuf_input(8, 1, 0x01, b.build(), (16, 32, 48 | (1 << 31))))


SWITCH_FORMAT = b"""name: sched_switch
ID: 316
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;

print fmt: "prev_comm=%s prev_pid=%d", REC->prev_comm, REC->prev_pid
"""


def dat_v6(big):
    """A trace.dat header of version 6 (trace-cmd.dat.v6(5)): one system,
    options with a clock, two CPUs without data."""
    e = ">" if big else "<"
    out = b"\x17\x08\x44tracing6\0" + bytes([1 if big else 0, 8]) + struct.pack(e + "I", 4096)
    for name, text in ((b"header_page", b"\tfield: u64 timestamp;\n"), (b"header_event", b"# header\n")):
        out += name + b"\0" + struct.pack(e + "Q", len(text)) + text
    out += struct.pack(e + "I", 0)
    out += struct.pack(e + "I", 1) + b"sched\0" + struct.pack(e + "I", 1)
    out += struct.pack(e + "Q", len(SWITCH_FORMAT)) + SWITCH_FORMAT
    out += struct.pack(e + "I", 0) + struct.pack(e + "I", 0)
    out += struct.pack(e + "Q", 6) + b"1 init"
    out += struct.pack(e + "I", 2) + b"options  \0"
    clock = b"[local] global\0"
    out += struct.pack(e + "HI", 4, len(clock)) + clock + struct.pack(e + "H", 0)
    out += b"flyrecord\0" + struct.pack(e + "QQQQ", 0, 0, 0, 0)
    return out


def dat_v7():
    """A trace.dat header of version 7 (trace-cmd.dat.v7(5)), sections not
    compressed: an options section pointing at the header info and the
    event formats."""
    head = b"\x17\x08\x44tracing7\0" + bytes([0, 8]) + struct.pack("<I", 4096) + b"none\0\0"
    options_at = len(head) + 8

    def section(sid, content):
        return struct.pack("<HHIQ", sid, 0, 0, len(content)) + content

    info = b"header_page\0" + struct.pack("<Q", 4) + b"page" + b"header_event\0" + struct.pack("<Q", 5) + b"event"
    formats = struct.pack("<I", 1) + b"sched\0" + struct.pack("<I", 1) + struct.pack("<Q", len(SWITCH_FORMAT)) + \
        SWITCH_FORMAT
    clock = b"[local]\0"
    # Options: TRACECLOCK, HEADER_INFO and EVENT_FORMATS (offsets), DONE.
    opts_len = (6 + len(clock)) + 2 * (6 + 8) + (6 + 8)
    options_size = 16 + opts_len
    info_at = options_at + options_size
    formats_at = info_at + 16 + len(info)
    opts = struct.pack("<HI", 4, len(clock)) + clock
    opts += struct.pack("<HIQ", 16, 8, info_at) + struct.pack("<HIQ", 18, 8, formats_at)
    opts += struct.pack("<HIQ", 0, 8, 0)
    return head + struct.pack("<Q", options_at) + section(0, opts) + section(16, info) + section(18, formats)


def make_dat_seeds():
    write("dat_header", "v6_little", dat_v6(False))
    write("dat_header", "v6_big", dat_v6(True))
    write("dat_header", "v7_none", dat_v7())


def main():
    make_catalog_seeds()
    make_trigger_seeds()
    make_subbuf_seeds()
    make_dat_seeds()
    return 0


if __name__ == "__main__":
    sys.exit(main())
