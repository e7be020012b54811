#!/usr/bin/env python3
"""Rooms, floors and arrows of one package's source folder (docs/architecture.md).

A room is a top-level module: a file under the folder, with its subfolder if it has
one, or a module written inline in the crate root. An arrow is a room naming another (`crate::x` anywhere, `x::` in the crate
root). A walk down from the crate root (depth first, rooms in name order) keeps every
arrow that leads further down and counts as "up" every arrow that leads back into a
room the walk has not left yet: an arrow up is half of a circle. Floors are the
longest chain of downward arrows, plus one. Comments and test modules are not read.

    python3 .ci/rooms.py src [-v]
"""
import collections, os, re, sys

root = sys.argv[1]
files = []
for d, _, names in os.walk(root):
    for name in names:
        path = os.path.join(d, name)
        if name.endswith('.rs') and 'tests' not in os.path.relpath(path, root):
            files.append(path)

def room(path):
    first = os.path.relpath(path, root).split(os.sep)[0]
    return first[:-3] if first.endswith('.rs') else first

rooms = {room(f) for f in files}
crate_root = 'main' if 'main' in rooms else 'lib'
root_code = open(os.path.join(root, crate_root + '.rs')).read()
rooms |= set(re.findall(r'^pub(?:\([a-z]+\))? mod ([a-z_]+) \{', root_code, re.M))
rooms = sorted(rooms)
arrows = collections.defaultdict(set)
for f in files:
    here = room(f)
    code = '\n'.join(line.split('//')[0] for line in open(f).read().splitlines())
    code = re.sub(r'#\[cfg\(test\)\]\s*mod [a-z_]+;', '', code)
    names = re.findall(r'\bcrate::([a-z_]+)', code)
    if here == crate_root:
        names += re.findall(r'\b(?:mod|use)\s+([a-z_]+)\b', code)
        names += re.findall(r'\b([a-z_]+)::', code)
    for name in names:
        if name in rooms and name != here:
            arrows[here].add(name)

down, up, state = collections.defaultdict(set), [], {}
def walk(r):
    state[r] = 'open'
    for t in sorted(arrows[r]):
        if state.get(t) == 'open':
            up.append((r, t))
        else:
            down[r].add(t)
            if t not in state:
                walk(t)
    state[r] = 'done'
for r in [crate_root] + rooms:
    if r not in state:
        walk(r)
floor = {}
def height(r):
    if r not in floor:
        floor[r] = 1 + max((height(t) for t in down[r]), default=-1)
    return floor[r]
total = sum(len(v) for v in arrows.values())
print(f"{root}: {len(rooms)} rooms, {1 + max(height(r) for r in rooms)} floors, "
      f"{total} arrows, {len(up)} up")
if '-v' in sys.argv:
    for r in sorted(rooms, key=lambda r: (-floor[r], r)):
        print(f"  floor {floor[r]}: {r} -> {', '.join(sorted(arrows[r]))}")
    for a, b in up:
        print(f"  up: {a} -> {b}")
