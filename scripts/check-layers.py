#!/usr/bin/env python3
"""Checks the layering of src/: prints the include graph between its folders
and fails (exit 1) on an include between folders that docs/DESIGN.md's
```layers block does not allow, on a cycle, or on FUSE calls outside
src/fuse/.

    python3 scripts/check-layers.py [--graph]
"""
import os
import re
import sys

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'src')
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)/[^"]+"', re.M)


def folder_of(path):
    rel = os.path.relpath(path, SRC)
    parts = rel.split(os.sep)
    return parts[0] if len(parts) > 1 else 'main'


def graph():
    edges, fuse_calls = {}, []
    folders = {d for d in os.listdir(SRC) if os.path.isdir(os.path.join(SRC, d))}
    for d, _, files in os.walk(SRC):
        for f in files:
            if not f.endswith(('.h', '.cc', '.c')):
                continue
            path = os.path.join(d, f)
            text = open(path, errors='replace').read()
            src = folder_of(path)
            edges.setdefault(src, set())
            for dst in INCLUDE.findall(text):
                if dst in folders and dst != src:
                    edges[src].add(dst)
            if src != 'fuse' and re.search(r'\bfuse_reply_\w+\s*\(|<fuse_lowlevel\.h>|<fuse\.h>', text):
                fuse_calls.append(os.path.relpath(path, os.path.join(SRC, '..')))
    return edges, fuse_calls


DESIGN = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'docs', 'DESIGN.md')


def allowed():
    """The folder -> folders DESIGN.md allows: its ```layers block, a line
    "FOLDER -> FOLDER ..." each. None when there is no such block."""
    text = open(DESIGN, errors='replace').read()
    block = re.search(r'^```layers\n(.*?)^```', text, re.M | re.S)
    if not block:
        return None
    out = {}
    for line in block.group(1).splitlines():
        if not line.strip():
            continue
        src, _, dsts = line.partition('->')
        out[src.strip()] = set(dsts.split())
    return out


def cycles(edges):
    """Strongly connected components of more than one folder (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main():
    edges, fuse_calls = graph()
    if '--graph' in sys.argv:
        for src in sorted(edges):
            print(f'{src} -> {" ".join(sorted(edges[src])) or "(nothing)"}')
    bad = False
    allow = allowed()
    if allow is None:
        bad = True
        print('docs/DESIGN.md has no ```layers block of allowed includes', file=sys.stderr)
        allow = {}
    for src in sorted(edges):
        if src not in allow:
            bad = True
            print(f'src/{src}/: a folder docs/DESIGN.md\'s layers do not list', file=sys.stderr)
            continue
        for dst in sorted(edges[src] - allow[src]):
            bad = True
            print(f'src/{src}/ includes src/{dst}/: not a layer docs/DESIGN.md allows ({src} -> '
                  f'{" ".join(sorted(allow[src])) or "nothing"})', file=sys.stderr)
    for comp in cycles(edges):
        bad = True
        print('include cycle between src/ folders: ' + ' <-> '.join(comp), file=sys.stderr)
    for path in fuse_calls:
        bad = True
        print(f'{path}: FUSE headers or fuse_reply_* outside src/fuse/', file=sys.stderr)
    if not bad:
        print('src/ layers: every include between folders is one docs/DESIGN.md allows; '
              'no cycle; FUSE only in src/fuse/')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
