#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check-cycles.py OBJDIR — fail when chirpd's modules depend on each other
in a cycle.

A module is foo.c with its foo.h (the objects foo.o); src/cuda/ is one
module, the CUDA backend. Module A depends on module B when A's object
calls a function or reads an object that B's object defines (nm: A's
undefined global symbols, B's defined ones). A cycle means neither can be
built, linked or tested without the other, whichever headers they include:
ctlcmd.c and reload.c both include only daemon.h, so the #include lines
cannot show that they call each other; the objects do.

Objects under OBJDIR/hooks (a second copy of some files with test hooks)
are left out. Prints each cycle as the modules in it and, for every edge
inside it, the symbols that make it; exits 1 on a cycle, 2 on a usage or
tool error, 0 with a one-line summary otherwise.
"""
import collections
import os
import subprocess
import sys


def module_of(objdir, path):
    rel = os.path.relpath(path, objdir)
    if rel.split(os.sep)[0] == 'cuda':
        return 'cuda'
    name = os.path.basename(rel)
    for suffix in ('.cu.o', '.o'):
        if name.endswith(suffix):
            return name[:-len(suffix)]
    return name


def nm(args, path):
    r = subprocess.run(['nm'] + args + [path], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit('check-cycles: nm %s: %s' % (path, r.stderr.strip()))
    return [line.split()[-1] for line in r.stdout.splitlines() if line.strip()]


def objects(objdir):
    for d, dirs, files in os.walk(objdir):
        dirs[:] = [x for x in dirs if not (d == objdir and x == 'hooks')]
        for f in files:
            if f.endswith('.o'):
                yield os.path.join(d, f)


def graph(objdir):
    """{module: {module it depends on: {symbols}}}, and the module count."""
    defined, wanted = {}, collections.defaultdict(set)
    mods = set()
    for p in objects(objdir):
        m = module_of(objdir, p)
        mods.add(m)
        for s in nm(['-g', '--defined-only'], p):
            defined[s] = m
        wanted[m].update(nm(['-u'], p))
    g = collections.defaultdict(lambda: collections.defaultdict(set))
    for m, syms in wanted.items():
        for s in syms:
            t = defined.get(s)
            if t is not None and t != m:
                g[m][t].add(s)
    return g, mods


def cycles(g):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
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

    sys.setrecursionlimit(10000)
    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit('usage: check-cycles.py OBJDIR (a build\'s obj/, e.g. build/obj)')
    objdir = sys.argv[1]
    g, mods = graph(objdir)
    found = cycles(g)
    for comp in found:
        print('cycle: %s' % ' '.join(comp))
        for a in comp:
            for b in sorted(g[a]):
                if b in comp:
                    print('  %s -> %s: %s' % (a, b, ', '.join(sorted(g[a][b]))))
    if found:
        print('%d cycle(s) among %d modules' % (len(found), len(mods)))
        return 1
    edges = sum(len(v) for v in g.values())
    print('no cycle among %d modules (%d dependencies)' % (len(mods), edges))
    return 0


if __name__ == '__main__':
    sys.exit(main())
