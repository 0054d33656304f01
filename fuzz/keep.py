#!/usr/bin/env python3
"""Chooses the inputs to keep in the repository: at most KEEP of them, picked greedily from a
libFuzzer merge control file so that together they cover as many code edges (then features) as
the whole corpus does, as far as KEEP inputs can. Prints the chosen paths, one per line.

usage: keep.py CONTROL_FILE KEEP
"""
import sys


def read(control):
    with open(control, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    count = int(lines[0])
    paths = lines[2:2 + count]
    sizes, edges, features = {}, {}, {}
    for line in lines[2 + count:]:
        parts = line.split()
        if len(parts) < 2:
            continue
        kind, index = parts[0], int(parts[1])
        if kind == "STARTED" and len(parts) > 2:
            sizes[index] = int(parts[2])
        elif kind == "COV":
            edges[index] = set(parts[2:])
        elif kind == "FT":
            features[index] = set(parts[2:])
    return paths, sizes, edges, features


def greedy(candidates, sets, covered, chosen, keep, sizes):
    """Adds the input adding most of `sets` not yet covered, until none adds any or KEEP is reached."""
    while len(chosen) < keep:
        best, gain = None, 0
        for i in candidates:
            if i in chosen:
                continue
            g = len(sets.get(i, set()) - covered)
            if g > gain or (g == gain and g > 0 and sizes.get(i, 0) < sizes.get(best, 0)):
                best, gain = i, g
        if best is None:
            return
        chosen.append(best)
        covered |= sets[best]


def main():
    control, keep = sys.argv[1], int(sys.argv[2])
    paths, sizes, edges, features = read(control)
    done = sorted(set(edges) | set(features))
    chosen = []
    greedy(done, edges, set(), chosen, keep, sizes)
    covered = set().union(*(features.get(i, set()) for i in chosen)) if chosen else set()
    greedy(done, features, covered, chosen, keep, sizes)
    for i in chosen:
        print(paths[i])


if __name__ == "__main__":
    main()
