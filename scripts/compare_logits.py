#!/usr/bin/env python3
"""Compares logit files (little-endian float32 [n_tokens][n_vocab]) for
scripts/check_heldback.sh, one line of figures per comparison, in the order given:

  A B                          -> REL_L2 WORST_POS_REL MAX_ABS TOP1_AGREE N_POS
  --greedy A GREEDY N_PROMPT   -> GREEDY_AGREE N_GREEDY
  --positions A B              -> the relative L2 of every position, in order (where a rounding
                                  flip starts: exact to ~1e-7 before it, a jump at it)

REL_L2: ||a - b|| / ||b|| over all positions; WORST_POS_REL: the largest per-position relative
L2; MAX_ABS: the largest |a - b|; TOP1_AGREE: positions whose argmax agree. --greedy: how many
of the greedy tokens (GREEDY, a JSON list: the argmax continuation of the first N_PROMPT
tokens) are the argmax of A at the position before each (teacher-forced: A holds the logits of
the prompt followed by those greedy tokens).

  compare_logits.py N_VOCAB (A B | --greedy A GREEDY N_PROMPT | --positions A B)...
"""
import array
import json
import math
import sys


def read(path, n_vocab):
    a = array.array("f")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    if sys.byteorder != "little":
        a.byteswap()
    if len(a) % n_vocab != 0 or not a:
        sys.exit(f"{path}: {len(a)} floats is not a whole number of rows of {n_vocab}")
    return a


def argmax(a, o, n):
    best = o
    for i in range(o + 1, o + n):
        if a[i] > a[best]:
            best = i
    return best - o


def compare(pa, pb, n_vocab):
    a, b = read(pa, n_vocab), read(pb, n_vocab)
    if len(a) != len(b):
        sys.exit(f"{pa} and {pb} differ in size: {len(a)} vs {len(b)} floats")
    n_pos = len(a) // n_vocab
    num = den = 0.0
    worst = max_abs = 0.0
    agree = 0
    for p in range(n_pos):
        o = p * n_vocab
        pn = pd = 0.0
        for i in range(o, o + n_vocab):
            d = a[i] - b[i]
            pn += d * d
            pd += b[i] * b[i]
            if abs(d) > max_abs:
                max_abs = abs(d)
        num += pn
        den += pd
        worst = max(worst, math.sqrt(pn / pd) if pd > 0 else math.inf)
        agree += argmax(a, o, n_vocab) == argmax(b, o, n_vocab)
    rel = math.sqrt(num / den) if den > 0 else math.inf
    return f"{rel:.3e} {worst:.3e} {max_abs:.3e} {agree} {n_pos}"


def positions(pa, pb, n_vocab):
    a, b = read(pa, n_vocab), read(pb, n_vocab)
    if len(a) != len(b):
        sys.exit(f"{pa} and {pb} differ in size: {len(a)} vs {len(b)} floats")
    out = []
    for p in range(len(a) // n_vocab):
        o = p * n_vocab
        pn = sum((a[i] - b[i]) ** 2 for i in range(o, o + n_vocab))
        pd = sum(b[i] * b[i] for i in range(o, o + n_vocab))
        out.append(f"{math.sqrt(pn / pd) if pd > 0 else math.inf:.1e}")
    return " ".join(out)


def greedy_agree(pa, greedy_path, n_prompt, n_vocab):
    a = read(pa, n_vocab)
    with open(greedy_path) as f:
        greedy = json.load(f)
    if n_prompt + len(greedy) - 1 > len(a) // n_vocab:
        sys.exit(f"{pa}: {len(a) // n_vocab} positions, too few for the greedy tokens")
    n = sum(argmax(a, (n_prompt - 1 + t) * n_vocab, n_vocab) == tok
            for t, tok in enumerate(greedy))
    return f"{n} {len(greedy)}"


def main():
    args = sys.argv[1:]
    if len(args) < 3:
        sys.exit(__doc__)
    n_vocab = int(args[0])
    args = args[1:]
    while args:
        if args[0] == "--positions":
            if len(args) < 3:
                sys.exit(__doc__)
            print(positions(args[1], args[2], n_vocab))
            args = args[3:]
        elif args[0] == "--greedy":
            if len(args) < 4:
                sys.exit(__doc__)
            print(greedy_agree(args[1], args[2], int(args[3]), n_vocab))
            args = args[4:]
        else:
            if len(args) < 2:
                sys.exit(__doc__)
            print(compare(args[0], args[1], n_vocab))
            args = args[2:]


if __name__ == "__main__":
    main()
