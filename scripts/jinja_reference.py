#!/usr/bin/python3
"""Renders a chat template the way Hugging Face's tokenizers do, with Debian's python3-jinja2: the
reference the Jinja renderer of src/jinja/ is tested against (tests/jinja/jinja_reference_test.cpp).

Usage: scripts/jinja_reference.py [TEMPLATE.jinja] < cases.json > results.json
  cases.json: {"now": SECONDS, "cases": [{"context": {...}}, ...]}; a case with "source" renders
  that template text instead of TEMPLATE.jinja.
  results.json: [{"ok": true, "text": "..."} | {"ok": false, "error": "..."}, ...], one per case.
strftime_now formats the pinned time `now` (seconds since the epoch) in UTC, so that both sides
agree; everything else is transformers' apply_chat_template environment:
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, loopcontrols), a tojson that
keeps non-ASCII characters, raise_exception and strftime_now as globals.
"""
import datetime
import json
import sys

from jinja2.exceptions import TemplateError
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def main():
    if len(sys.argv) > 2:
        sys.exit(__doc__)
    source = None
    if len(sys.argv) == 2:
        with open(sys.argv[1], encoding="utf-8") as f:
            source = f.read()
    request = json.load(sys.stdin)
    now = datetime.datetime.fromtimestamp(request.get("now", 0), tz=datetime.timezone.utc)

    def raise_exception(message):
        raise TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(format):
        return now.strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    compiled = {}

    def compile(text):
        if text not in compiled:
            try:
                compiled[text] = env.from_string(text)
            except Exception as e:  # a template jinja2 cannot compile
                compiled[text] = e
        return compiled[text]

    results = []
    for case in request["cases"]:
        template = compile(case.get("source", source))
        if isinstance(template, Exception):
            results.append({"ok": False, "error": f"{type(template).__name__}: {template}"})
            continue
        try:
            results.append({"ok": True, "text": template.render(**case["context"])})
        except Exception as e:
            results.append({"ok": False, "error": f"{type(e).__name__}: {e}"})
    json.dump(results, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
