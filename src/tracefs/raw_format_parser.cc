#include "tracefs/raw_format_parser.h"

#include <traceevent/event-parse.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "base/text.h"
#include "format/type_model.h"

namespace eventfs {
namespace {

struct TepDeleter {
  void operator()(tep_handle* t) const { tep_free(t); }
};

// "__data_loc char[]" -> "char", "char[TASK_COMM_LEN]" -> "char".
std::string element_type(const char* type) {
  std::string t = type ? type : "";
  for (const char* prefix : {"__data_loc ", "__rel_loc "})
    if (t.rfind(prefix, 0) == 0) t = t.substr(std::string(prefix).size());
  if (auto br = t.find('['); br != std::string::npos) t = t.substr(0, br);
  return trimmed(t);
}

unsigned known_bytes(const std::string& type, unsigned fallback) {
  if (auto st = stable_type(type)) return st->bytes();
  return fallback ? fallback : 1;
}

RawField convert_field(const tep_format_field* f) {
  RawField r;
  r.name = f->name;
  r.offset = static_cast<unsigned>(f->offset);
  r.size = static_cast<unsigned>(f->size);
  r.is_signed = f->flags & TEP_FIELD_IS_SIGNED;
  r.is_pointer = f->flags & TEP_FIELD_IS_POINTER;
  r.elem_type = r.is_pointer ? trimmed(f->type) : element_type(f->type);
  if (f->flags & TEP_FIELD_IS_DYNAMIC) {
    r.shape = FieldShape::DynArray;
    r.loc = (f->flags & TEP_FIELD_IS_RELATIVE) ? DynLoc::RelLoc : DynLoc::DataLoc;
    r.elem_bytes = known_bytes(r.elem_type, f->elementsize);
  } else if ((f->flags & TEP_FIELD_IS_ARRAY) && f->size == 0) {
    r.shape = FieldShape::DynArray;
    r.loc = DynLoc::Tail;
    r.elem_bytes = known_bytes(r.elem_type, f->elementsize);
  } else if (f->flags & TEP_FIELD_IS_ARRAY) {
    r.shape = FieldShape::Array;
    if (f->arraylen > 0 && r.size % f->arraylen == 0) {
      r.count = f->arraylen;
      r.elem_bytes = r.size / r.count;
    } else {  // a symbolic length such as [TASK_COMM_LEN]
      r.elem_bytes = known_bytes(r.elem_type, f->elementsize);
      r.count = r.size / r.elem_bytes;
    }
  } else {
    r.elem_bytes = r.size;
  }
  return r;
}

const tep_print_arg* field_arg(const tep_print_arg* a) {
  for (; a; ) {
    switch (a->type) {
      case TEP_PRINT_FIELD: return a;
      case TEP_PRINT_TYPE: a = a->typecast.item; break;
      case TEP_PRINT_OP: {
        if (const tep_print_arg* l = field_arg(a->op.left)) return l;
        a = a->op.right;
        break;
      }
      default: return nullptr;
    }
  }
  return nullptr;
}

// The first table of each kind per raw field wins (a print fmt that decodes
// one field twice names it the same way both times in every kernel so far).
// A symbolic table's entry whose value is not a number (an enum constant the
// kernel did not resolve, as before TRACE_DEFINE_ENUM) is left out: its value
// is unknown.
void add_table(const tep_print_arg* field, const tep_print_flag_sym* syms, bool numbers_only,
               std::map<std::string, FlagTable>& out) {
  const tep_print_arg* f = field_arg(field);
  if (!f || !f->field.name || out.count(f->field.name)) return;
  FlagTable table;
  for (const tep_print_flag_sym* s = syms; s; s = s->next) {
    char* end = nullptr;
    const std::uint64_t value = std::strtoull(s->value, &end, 0);
    if (numbers_only && (end == s->value || *end != '\0')) continue;
    table.emplace_back(value, s->str ? s->str : "");
  }
  out.emplace(f->field.name, std::move(table));
}

void collect_tables(const tep_print_arg* a, RawEvent& out) {
  for (; a; a = a->next) {
    switch (a->type) {
      case TEP_PRINT_FLAGS:
        add_table(a->flags.field, a->flags.flags, false, out.print_flags);
        collect_tables(a->flags.field, out);
        break;
      case TEP_PRINT_SYMBOL:
        add_table(a->symbol.field, a->symbol.symbols, true, out.print_symbols);
        collect_tables(a->symbol.field, out);
        break;
      case TEP_PRINT_OP:
        collect_tables(a->op.left, out);
        collect_tables(a->op.right, out);
        break;
      case TEP_PRINT_TYPE: collect_tables(a->typecast.item, out); break;
      case TEP_PRINT_FUNC: collect_tables(a->func.args, out); break;
      default: break;
    }
  }
}

// libtraceevent's format tokenizer keeps its input in file-scope variables,
// so two parses at once (two FUSE workers looking up two events) corrupt each
// other. Every parse in the process goes through this lock.
std::mutex& tep_parse_mutex() {
  static std::mutex mu;
  return mu;
}

}  // namespace

Result<RawEvent> parse_raw_format(const std::string& system, const std::string& text) {
  std::lock_guard lock(tep_parse_mutex());
  std::unique_ptr<tep_handle, TepDeleter> tep(tep_alloc());
  if (!tep) return fail(ENOMEM, "out of memory");
  tep_event* ev = nullptr;
  enum tep_errno rc = tep_parse_format(tep.get(), &ev, text.data(), text.size(), system.c_str());
  if (rc != TEP_ERRNO__SUCCESS || !ev) {
    char buf[256] = "unknown error";
    tep_strerror(tep.get(), rc, buf, sizeof buf);
    return fail(EINVAL, fmt::format("libtraceevent cannot parse the format: {}", buf));
  }
  RawEvent r;
  r.system = ev->system ? ev->system : system;
  r.name = ev->name ? ev->name : "";
  r.id = ev->id;
  for (const tep_format_field* f = ev->format.common_fields; f; f = f->next)
    r.common_fields.push_back(convert_field(f));
  for (const tep_format_field* f = ev->format.fields; f; f = f->next)
    r.fields.push_back(convert_field(f));
  collect_tables(ev->print_fmt.args, r);
  return r;
}

}  // namespace eventfs
