#!/usr/bin/env python3
"""Re-styles the acc-/nll-/turns- gnuplot scripts `tova eval` wrote before commit 6d95107 (one
colour and one dash per policy) as that commit writes them, and re-draws them with gnuplot.

Each series `... pt N ps 1 dt X title "P"` (or `pt N lc K dt X`) gets series_style(i), i the
index of P among the plot's titles in order of first appearance, `full` excluded: what
src/eval/task_report.cpp now writes (the palette: src/eval/plots.cpp series_style).

Usage: bench/restyle_eval_plots.py DIR...   (the --out folders of tova eval)
"""
import pathlib
import re
import subprocess
import sys

COLOURS = ["#332288", "#cc6677", "#117733", "#ddcc77", "#88ccee", "#882255", "#44aa99",
           "#999933", "#aa4499", "#ee6677", "#4477aa", "#ccbb44"]
DASHES = ["1", "(10,5)", "(3,4)", "(12,4,3,4)", "(18,6)", "(6,6)", "(14,4,3,4,3,4)", "(8,3)",
          "(2,8)", "(12,3,2,3)", "(20,4,6,4)", "(4,4,12,4)"]


def series_style(i):
    n = len(COLOURS)
    return f' lc rgb "{COLOURS[i % n]}" dt {DASHES[(i + i // n) % n]}'


SERIES = re.compile(r'(pt \d+)( ps 1)?( lc \d+)? dt \d+ (title "((?:[^"\\]|\\.)*)")')


def restyle(text):
    order = {}

    def sub(m):
        name = m.group(5)
        i = order.setdefault(name, len(order))
        return f"{m.group(1)}{m.group(2) or ''}{series_style(i)} {m.group(4)}"

    return SERIES.sub(sub, text)


def main(dirs):
    for d in map(pathlib.Path, dirs):
        for gp in sorted(d.glob("*.gp")):
            if not gp.name.startswith(("acc-", "nll-", "turns-")):
                continue
            text = gp.read_text()
            new = restyle(text)
            if new != text:
                gp.write_text(new)
                subprocess.run(["gnuplot", gp.name], cwd=d, check=True)
                print(f"restyled {gp}")


if __name__ == "__main__":
    main(sys.argv[1:])
