#!/usr/bin/env python3
"""Paired analysis of a `tova ppl --out DIR` sweep (DIR/results.json), as markdown.

1. Per budget, each policy against a reference policy (default tova): the mean over chunks of
   the per-chunk mean-NLL difference (policy - reference) with its standard error, and in how
   many chunks the reference is better. Chunks share their text, so the paired difference has
   far less spread than either perplexity's own error bar.
2. Where in the chunk the gaps arise: mean NLL minus full's, per position bin, for one budget.

Usage: analyze_sweep.py DIR [--ref tova] [--budget K]
"""
import argparse
import json
import math


def mean_se(xs):
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return m, float("nan")
    var = sum((x - m) ** 2 for x in xs) / (n - 1)
    return m, math.sqrt(var / n)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--ref", default="tova")
    ap.add_argument("--budget", type=int, default=None)
    a = ap.parse_args()
    j = json.load(open(a.dir + "/results.json"))
    res = j["results"]
    ctx = j["header"]["ctx"]
    by = {(r["policy"], r["budget"]): r for r in res}
    budgets = sorted({r["budget"] for r in res if r["budget"] is not None})
    policies = []
    for r in res:
        if r["budget"] is not None and r["policy"] not in policies:
            policies.append(r["policy"])
    n_chunks = j["header"]["n_chunks"]

    print(f"### Paired per-chunk difference in mean NLL against `{a.ref}` "
          f"({n_chunks} chunks; positive = worse than {a.ref})\n")
    print("| policy | " + " | ".join(f"k={b}" for b in budgets) + " |")
    print("|---|" + "---:|" * len(budgets))
    for p in policies:
        if p == a.ref:
            continue
        cells = []
        for b in budgets:
            x, y = by.get((p, b)), by.get((a.ref, b))
            if x is None or y is None:
                cells.append("-")
                continue
            d = [u - v for u, v in zip(x["nll_by_chunk"], y["nll_by_chunk"])]
            m, se = mean_se(d)
            wins = sum(1 for v in d if v > 0)
            se_s = "" if math.isnan(se) else f" ± {se:.4f}"
            cells.append(f"{m:+.4f}{se_s} ({wins}/{len(d)})")
        print(f"| {p} | " + " | ".join(cells) + " |")
    print(f"\nCell: mean ± standard error of (NLL_policy - NLL_{a.ref}) over chunks, and (in "
          f"parentheses) the chunks where {a.ref} has the lower NLL.\n")

    full = next((r for r in res if r["budget"] is None), None)
    if full is None:
        return
    b = a.budget if a.budget is not None else budgets[len(budgets) // 2]
    edges = [0]
    e = b
    while e < ctx - 1:
        edges.append(e)
        e *= 2
    edges.append(ctx - 1)
    print(f"### Where the gap to `full` arises, k = {b}: mean NLL - full's, by position in the "
          f"chunk\n")
    print("| policy | " + " | ".join(f"{edges[i]}-{edges[i+1]-1}" for i in range(len(edges) - 1))
          + " |")
    print("|---|" + "---:|" * (len(edges) - 1))
    fp = full["nll_by_position"]
    print("| full (its own NLL) | " + " | ".join(
        f"{sum(fp[edges[i]:edges[i+1]]) / (edges[i+1] - edges[i]):.4f}"
        for i in range(len(edges) - 1)) + " |")
    for p in policies:
        r = by.get((p, b))
        if r is None:
            continue
        pp = r["nll_by_position"]
        cells = []
        for i in range(len(edges) - 1):
            s0, s1 = edges[i], edges[i + 1]
            cells.append(f"{sum(pp[t] - fp[t] for t in range(s0, s1)) / (s1 - s0):+.4f}")
        print(f"| {p} | " + " | ".join(cells) + " |")
    print()


if __name__ == "__main__":
    main()
