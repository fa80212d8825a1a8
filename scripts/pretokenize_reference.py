#!/usr/bin/env python3
"""Reference splits of a pre-tokenizer regex, with Python's `regex` module (Debian python3-regex).

Reads UTF-8 texts separated by NUL bytes on stdin and writes, for each, one line: the lengths in
code points of its words (the regex's matches, in order), separated by spaces; a character no
match covers would be a word of its own between matches (the patterns here cover every one). The pattern is the
one llama.cpp's llama-vocab.cpp uses for tokenizer.ggml.pre "gpt-4o" (tiktoken's o200k regex with
its Unicode case classes written as (?=\\p{L})[^a-z] and (?=\\p{L})[^A-Z]).

    python3 scripts/pretokenize_reference.py gpt-4o < texts > lengths.txt
"""
import sys

import regex

CONTRACTION = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?"
PATTERNS = {
    "gpt-4o": (
        r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+" + CONTRACTION +
        r"|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*" + CONTRACTION +
        r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
    ),
}


def main() -> int:
    if len(sys.argv) != 2 or sys.argv[1] not in PATTERNS:
        print(f"usage: {sys.argv[0]} {{{','.join(PATTERNS)}}} < texts", file=sys.stderr)
        return 2
    pattern = regex.compile(PATTERNS[sys.argv[1]])
    texts = sys.stdin.buffer.read().decode("utf-8").split("\0")
    for t in texts:
        lengths, end = [], 0
        for m in pattern.finditer(t):
            if m.start() > end:
                lengths.append(m.start() - end)
            lengths.append(m.end() - m.start())
            end = m.end()
        if end < len(t):
            lengths.append(len(t) - end)
        print(" ".join(map(str, lengths)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
