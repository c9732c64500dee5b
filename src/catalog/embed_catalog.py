#!/usr/bin/env python3
"""Turns a catalog file into a C++ source defining builtin_catalog_text()."""
import sys

src, out = sys.argv[1], sys.argv[2]
text = open(src, encoding="utf-8").read()
delim = "eventfs_catalog"
if ")" + delim + '"' in text:
    sys.exit(f"{src}: contains the raw string delimiter")
with open(out, "w", encoding="utf-8") as f:
    f.write('// Generated from %s by embed_catalog.py: do not edit.\n' % src.split("/")[-1])
    f.write('#include "catalog/parser.h"\n\n')
    f.write("namespace eventfs {\n")
    f.write("std::string_view builtin_catalog_text() {\n")
    f.write('  static constexpr char kText[] = R"%s(%s)%s";\n' % (delim, text, delim))
    f.write("  return {kText, sizeof kText - 1};\n}\n")
    f.write("}  // namespace eventfs\n")
