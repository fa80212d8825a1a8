#!/usr/bin/env python3
"""The tables of docs/RESULTS.md (g) from `tova eval` records (results.json).

Usage: bench/results_g_tables.py single|turns|nll DIR [DIR ...]
  single: per task, accuracy % and answer NLL minus full's (paired mean, its se) per k.
  turns:  per (policy, k), accuracy % per turn and pooled, answer NLL minus full's per turn and
          pooled (se), kvzip's extra tokens per conversation against the tokens it fed.
  nll:    per task, answer NLL minus full's (se) per k, full's own NLL first.
  cases:  per (policy, k), accuracy % and answer NLL minus full's over all turns, one column
          pair per folder (the held-back cases side by side).
Records of several folders (the same grid on other seeds or haystacks) are pooled.
"""
import json
import math
import sys
from collections import OrderedDict, defaultdict


def load(dirs):
    recs = []
    for d in dirs:
        j = json.load(open(f"{d}/results.json"))
        for r in j["records"]:
            r["_run"] = d
            recs.append(r)
    return recs


def key(r):
    return (r["_run"], r["task"], r["length"], r["sample"], r["turn"])


def mean_se(xs):
    n = len(xs)
    if n == 0:
        return float("nan"), float("nan")
    m = sum(xs) / n
    if n < 2:
        return m, float("nan")
    v = sum((x - m) ** 2 for x in xs) / (n - 1)
    return m, math.sqrt(v / n)


def fmt_delta(m, se):
    if math.isnan(m):
        return "-"
    a = abs(m)
    digits = 3 if a < 0.1 else 2 if a < 10 else 1
    s = f"{m:+.{digits}f}"
    if not math.isnan(se):
        s += f" ({se:.{digits}f})"
    return s


def configs(recs):
    pols = OrderedDict()
    for r in recs:
        if r["budget"] is not None:
            pols.setdefault(r["policy"], set()).add(r["budget"])
    return pols


def full_of(recs):
    return {key(r): r for r in recs if r["budget"] is None}


def cell(recs, full, pred):
    rs = [r for r in recs if pred(r)]
    acc = 100 * sum(r["score"] == 1.0 for r in rs) / len(rs) if rs else float("nan")
    d = [r["answer_nll"] - full[key(r)]["answer_nll"] for r in rs if key(r) in full]
    return acc, mean_se(d), len(rs)


def fmt_acc(a):
    return "-" if math.isnan(a) else f"{a:.0f}"


def single(recs):
    full = full_of(recs)
    out = []
    for task in OrderedDict((r["task"], 1) for r in recs):
        rt = [r for r in recs if r["task"] == task]
        pols = configs(rt)
        ks = sorted(set().union(*pols.values()))
        fr = [r for r in rt if r["budget"] is None]
        fa = 100 * sum(r["score"] == 1.0 for r in fr) / len(fr)
        fn = mean_se([r["answer_nll"] for r in fr])[0]
        n = len(fr)
        out.append(f"**{task}** ({n} samples; `full`: {fa:.0f} %, answer NLL {fn:.3f})\n")
        out.append("| policy | " + " | ".join(f"acc k={k}" for k in ks) + " | "
                   + " | ".join(f"NLL - full, k={k}" for k in ks) + " |")
        out.append("|---|" + "---:|" * (2 * len(ks)))
        for p in pols:
            accs, deltas = [], []
            for k in ks:
                a, (m, se), _ = cell(rt, full, lambda r: r["policy"] == p and r["budget"] == k)
                accs.append(fmt_acc(a))
                deltas.append(fmt_delta(m, se))
            out.append(f"| {p} | " + " | ".join(accs) + " | " + " | ".join(deltas) + " |")
        out.append("")
    return "\n".join(out)


def turns(recs):
    full = full_of(recs)
    n_turns = max(r["n_turns"] for r in recs)
    out = []
    fr = [r for r in recs if r["budget"] is None]
    n_conv = len({(r["_run"], r["task"], r["sample"]) for r in fr})
    out.append(f"({n_conv} conversations, {n_turns} turns each)\n")
    hdr = ("| policy | k | " + " | ".join(f"turn {t}" for t in range(1, n_turns + 1))
           + " | all | " + " | ".join(f"NLL - full, turn {t}" for t in range(1, n_turns + 1))
           + " | NLL - full, all | extra tokens |")
    out.append(hdr)
    out.append("|---|---:|" + "---:|" * (2 * n_turns + 3))
    rows = [("full", None)] + [(p, k) for p, ks in configs(recs).items() for k in sorted(ks)]
    for p, k in rows:
        sel = lambda r, t=None: (r["policy"] == p and r["budget"] == k
                                 and (t is None or r["turn"] == t))
        accs, deltas = [], []
        for t in range(1, n_turns + 1):
            a, (m, se), _ = cell(recs, full, lambda r: sel(r, t))
            accs.append(fmt_acc(a))
            deltas.append(fmt_delta(m, se) if k is not None else f"({mean_se([r['answer_nll'] for r in recs if sel(r, t)])[0]:.3f})")
        a, (m, se), _ = cell(recs, full, lambda r: sel(r))
        allm = fmt_delta(m, se) if k is not None else f"({mean_se([r['answer_nll'] for r in recs if sel(r)])[0]:.3f})"
        rs = [r for r in recs if sel(r)]
        extra = "-"
        if any(r["pass_tokens"] for r in rs):
            conv = defaultdict(lambda: [0, 0])
            for r in rs:
                c = conv[(r["_run"], r["task"], r["sample"])]
                c[0] += r["pass_tokens"]
                c[1] = max(c[1], r["prompt_tokens"] + r["n_generated"])
            e = [c[0] for c in conv.values()]
            x = [c[0] / c[1] for c in conv.values()]
            extra = f"{sum(e) / len(e):.0f} ({sum(x) / len(x):.1f}x)"
        out.append(f"| {p} | {'-' if k is None else k} | " + " | ".join(accs) + f" | {a:.0f} | "
                   + " | ".join(deltas) + f" | {allm} | {extra} |")
    return "\n".join(out) + "\n"


def nll(recs):
    full = full_of(recs)
    out = []
    tasks = list(OrderedDict((r["task"], 1) for r in recs))
    ks = sorted(set().union(*configs(recs).values()))
    cols = [(t, k) for t in tasks for k in ks]
    out.append("| policy | " + " | ".join(f"{t} k={k}" for t, k in cols) + " |")
    out.append("|---|" + "---:|" * len(cols))
    fl = []
    for t, k in cols:
        fl.append(f"{mean_se([r['answer_nll'] for r in recs if r['budget'] is None and r['task'] == t])[0]:.2f}")
    out.append("| full (NLL) | " + " | ".join(fl) + " |")
    for p in configs(recs):
        cs = []
        for t, k in cols:
            _, (m, se), _ = cell(recs, full, lambda r: r["policy"] == p and r["budget"] == k
                                 and r["task"] == t)
            cs.append(fmt_delta(m, se))
        out.append(f"| {p} | " + " | ".join(cs) + " |")
    return "\n".join(out) + "\n"


def cases(recs):
    runs = list(OrderedDict((r["_run"], 1) for r in recs))
    full = full_of(recs)
    names = [d.rstrip("/").split("/")[-1] for d in runs]
    out = ["| policy | k | " + " | ".join(f"{n}: acc | NLL - full" for n in names) + " |",
           "|---|---:|" + "---:|---:|" * len(runs)]
    rows = [("full", None)] + [(p, k) for p, ks in configs(recs).items() for k in sorted(ks)]
    for p, k in rows:
        cs = []
        for d in runs:
            sel = lambda r: r["_run"] == d and r["policy"] == p and r["budget"] == k
            a, (m, se), _ = cell(recs, full, sel)
            if k is None:
                m = mean_se([r["answer_nll"] for r in recs if sel(r)])[0]
                cs.append(f"{a:.0f} | ({m:.3f})")
            else:
                cs.append(f"{a:.0f} | {fmt_delta(m, se)}")
        out.append(f"| {p} | {'-' if k is None else k} | " + " | ".join(cs) + " |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    what, dirs = sys.argv[1], sys.argv[2:]
    print({"single": single, "turns": turns, "nll": nll, "cases": cases}[what](load(dirs)))
