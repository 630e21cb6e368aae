#!/usr/bin/env python3
"""Compares two folders file by file (SHA-256 of every file, and the same
set of files); prints "identical: N files" or each difference and exits 1.

Usage: compare_trees.py DIR_A DIR_B
"""
import hashlib
import os
import sys


def digests(root):
    out = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, root)] = hashlib.sha256(
                    f.read()).hexdigest()
    return out


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 1
    a, b = digests(sys.argv[1]), digests(sys.argv[2])
    differ = sorted(p for p in set(a) | set(b) if a.get(p) != b.get(p))
    for path in differ:
        print("differs: %s (%s vs %s)" % (path, a.get(path, "missing"),
                                          b.get(path, "missing")))
    if differ:
        return 1
    print("identical: %d files" % len(a))
    return 0


if __name__ == "__main__":
    sys.exit(main())
