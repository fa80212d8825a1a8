"""The README's shell examples run as written, each with the bundled model and small sizes.

Every `tova ...` command in a ```sh block of README.md (continuation lines joined) runs with:
the model (-m) replaced by the bundled stories260K, files the README only names (model.gguf,
story.txt, book.txt, ids.json) made small in a temporary folder, --out and /tmp paths moved
there, and sizes cut (-n, bench's -p/-d, -c, --lengths, --samples, --window, --chunks 1
added to a chunked ppl, --chat-template chatml beside --chat: the bundled model has none).
Everything else, flags and policies included, is the README's. A
command that fails fails the test (its command line and stderr are printed). `tova serve` is
not run here (a server; the Server* tests drive it with real clients), nor are the set-up, test
and fuzz scripts (CI runs them) or curl.

Usage: readme_examples.py PATH/TO/tova README.md
"""

import os
import re
import shlex
import subprocess
import sys
import tempfile


def commands(readme):
    """Each command of the sh blocks as an argument list (a quoted argument may span lines)."""
    out = []
    for block in re.findall(r"```sh\n(.*?)```", readme, re.S):
        block = block.replace("\\\n", " ")
        pending = ""
        for line in block.splitlines():
            pending += line + "\n"
            try:
                args = shlex.split(pending, comments=True)
            except ValueError:  # an open quote: the command goes on on the next line
                continue
            pending = ""
            while args:
                cut = args.index("&&") if "&&" in args else len(args)
                out.append(args[:cut])
                args = args[cut + 1:]
        assert not pending.strip(), f"unbalanced quotes in README.md: {pending}"
    return out


# Flags whose values are cut to keep the run small: flag -> (value, only for these commands).
SMALL = {
    "-n": ("8", None),
    "-p": ("16", {"bench"}),
    "-d": ("0,32", {"bench"}),
    "-c": ("128", None),
    "--ctx-size": ("128", None),
    "--lengths": ("1536", None),
    "--samples": ("1", None),
    "--window": ("32", None),
    "--full-batch": ("2", None),
}


def adapt(args, tmp, root, bundled):
    """The README's arguments with the substitutions above; None: not run here."""
    sub = args[0]
    out = []
    i = 0
    while i < len(args):
        a = args[i]
        v = args[i + 1] if i + 1 < len(args) else None
        if a in ("-m", "--model") and v is not None:
            out += [a, bundled]
            i += 2
            continue
        if a in SMALL and v is not None and (SMALL[a][1] is None or sub in SMALL[a][1]):
            out += [a, SMALL[a][0]]
            i += 2
            continue
        if a == "--shape" and v is not None:
            out += [a, "tiny"]  # a real model's shape is gigabytes of random weights
            i += 2
            continue
        if a in ("--budgets", "--kv-budget") and v is not None:
            # Within the cut sizes (a budget must stay below -c in ppl and throughput).
            out += [a, ",".join(str(min(int(b), 24 + 8 * n)) for n, b in enumerate(v.split(",")))]
            i += 2
            continue
        if a == "-f" and v is not None and not os.path.exists(os.path.join(root, v)):
            out += [a, os.path.join(tmp, "story.txt")]
            i += 2
            continue
        if a == "--tokens" and v is not None and not os.path.exists(os.path.join(root, v)):
            out += [a, os.path.join(tmp, "ids.json")]
            i += 2
            continue
        if a == "--out" and v is not None:
            out += [a, os.path.join(tmp, "out", v.lstrip("/").replace("/", "_"))]
            i += 2
            continue
        if a == "--chat" and "--chat-template" not in args:
            out += [a, "--chat-template", "chatml"]  # the bundled model has no template
            i += 1
            continue
        out.append(a)
        i += 1
    if sub == "ppl" and "--stream" not in out:
        out += ["--chunks", "1"]
    return out


def main():
    tova, readme_path = sys.argv[1], sys.argv[2]
    root = os.path.dirname(os.path.abspath(readme_path))
    bundled = os.path.join(root, "assets", "stories260K.gguf")
    readme = open(readme_path, encoding="utf-8").read()
    ran = skipped = 0
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "out"))
        with open(os.path.join(tmp, "story.txt"), "w") as f:
            f.write("Once upon a time, there was a little girl named Lily. She loved to play "
                    "outside with her ball. One day, she saw a big red ball in the park. " * 12)
        with open(os.path.join(tmp, "ids.json"), "w") as f:
            f.write("[1, 403, 407, 261, 378]")
        for args in commands(readme):
            line = shlex.join(args)
            prog = args[0]
            if prog not in ("tova", "./build/bin/tova"):
                print(f"skipped (not a tova command; CI runs the scripts): {line}")
                skipped += 1
                continue
            if args[1] == "serve":
                print(f"skipped (a server; the Server* tests drive it): {line}")
                skipped += 1
                continue
            args = [a.replace("/tmp/", tmp + "/") for a in args]
            argv = [tova] + adapt(args[1:], tmp, root, bundled)
            shared = os.environ.get("TOVA_SHARED_DIR")
            if shared:  # the README's ../shared is the shared data folder
                argv = [a.replace("../shared/", shared.rstrip("/") + "/") for a in argv]
            r = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=300,
                               stdin=subprocess.DEVNULL)
            if r.returncode != 0:
                print(f"FAILED: {line}\n  as: {shlex.join(argv)}\n  exit {r.returncode}\n"
                      f"{r.stderr}")
                return 1
            print(f"ok: {shlex.join(argv[1:])}")
            ran += 1
    print(f"README examples: {ran} ran, {skipped} skipped")
    return 0 if ran > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
