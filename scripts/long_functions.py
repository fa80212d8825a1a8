#!/usr/bin/env python3
"""Functions longer than a limit (default 80 lines), longest first: the figure issue 45 asks for.

A function is a brace block opened at namespace level (or directly inside a class or struct)
whose opening follows a parameter list's ')'; lambdas and blocks inside a function count toward
that function. String and character literals and // comments are skipped, so braces inside them
do not count. A heuristic, not a parser: it reads C++ as text.

Usage: scripts/long_functions.py [--limit N] DIR...   (e.g. src apps include python)
"""
import os
import re
import sys


def long_functions(path, limit):
    found = []
    lines = open(path, errors="replace").read().split("\n")
    stack, start = [], None
    for i, raw in enumerate(lines):
        s = re.sub(r'"([^"\\]|\\.)*"', '""', raw)
        s = re.sub(r"'([^'\\]|\\.)'", "''", s)
        s = re.sub(r"//.*", "", s)
        for pos, ch in enumerate(s):
            if ch == "{":
                kind = "block"
                if start is None and all(k == "scope" for k in stack):
                    before = (" ".join(lines[max(0, i - 3):i]) + " " + s[:pos]).strip()
                    if re.match(r"\s*(namespace|extern \"C\")", s):
                        kind = "scope"
                    elif re.search(r"\b(struct|class|union|enum)\b", s[:pos]):
                        kind = "scope"
                    elif re.search(r"\)\s*(const)?\s*(noexcept)?\s*(override)?\s*(HWY_ATTR)?"
                                   r"\s*(->\s*[\w:<>]+)?\s*$", before):
                        kind, start = "function", i
                stack.append(kind)
            elif ch == "}" and stack:
                if stack.pop() == "function" and start is not None:
                    n = i - start + 1
                    if n > limit:
                        found.append((n, path, start + 1, lines[start].strip()[:70]))
                    start = None
    return found


def main(argv):
    limit = 80
    if len(argv) > 1 and argv[0] == "--limit":
        limit, argv = int(argv[1]), argv[2:]
    found = []
    for root in argv or ["src", "apps", "include", "python"]:
        for dirpath, _, names in os.walk(root):
            for name in sorted(names):
                if name.endswith((".cpp", ".h")):
                    found += long_functions(os.path.join(dirpath, name), limit)
    for n, path, line, text in sorted(found, reverse=True):
        print(f"{n:5d} {path}:{line} {text}")
    print(f"{len(found)} functions over {limit} lines", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
