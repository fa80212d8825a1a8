# Constrained decoding from Python: generate(..., json_schema=...) on random-weight models
# gives JSON that Debian's python3-jsonschema validates, 200 of 200 sampled outputs (temperature
# 1, different seeds), with a SentencePiece vocabulary (the bundled stories260K: byte tokens,
# leading-space pieces) and a byte-level BPE one (the qwen2 fixture); malformed grammars and
# schemas raise ValueError naming the fault.
import json
import os
import pathlib
import subprocess

import jsonschema
import pytest

import tova

BUILD = pathlib.Path(tova.__file__).resolve().parents[2]
SOURCE = pathlib.Path(__file__).resolve().parents[2]
SHARED = pathlib.Path(os.environ.get("TOVA_SHARED_DIR", SOURCE.parent / "shared"))
SCHEMA = json.loads((SOURCE / "tests/data/grammar/person.schema.json").read_text())


def validator():
    cls = jsonschema.validators.validator_for(SCHEMA, default=jsonschema.Draft202012Validator)
    return cls(SCHEMA, format_checker=jsonschema.FormatChecker())


def generate_many(engine, n, prompt):
    v = validator()
    outputs = []
    for seed in range(n):
        s = engine.session(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed=seed)
        gen = s.generate(prompt, max_tokens=600, json_schema=SCHEMA)
        text = "".join(gen)
        assert gen.finish_reason == "stop", (seed, text)
        obj = json.loads(text)  # raises on invalid JSON
        errors = [e.message for e in v.iter_errors(obj)]
        assert not errors, (seed, text, errors)
        outputs.append(text)
    return outputs


def test_json_schema_200_of_200_spm():
    engine = tova.Engine(threads=1)
    outputs = generate_many(engine, 200, "Once upon a time")
    assert len(set(outputs)) > 150  # sampled, not one answer repeated


def test_json_schema_200_of_200_bpe():
    path = SHARED / "models" / "rand-qwen2-f32.gguf"
    if not path.exists():
        pytest.skip(f"{path} not found (TOVA_SHARED_DIR)")
    engine = tova.Engine(str(path), threads=1)
    outputs = generate_many(engine, 200, "Hello")
    assert len(set(outputs)) > 50  # this fixture repeats itself more (117 distinct measured)


def test_grammar_and_errors():
    engine = tova.Engine(threads=1)
    s = engine.session(temperature=1.0, seed=3)
    text = "".join(s.generate("Once", max_tokens=50, grammar='root ::= "yes" | "no" | [0-9]{2}'))
    assert text in ("yes", "no") or (len(text) == 2 and text.isdigit()), text
    # The schema as JSON text works too, and the next generate without one is unconstrained.
    text = "".join(s.generate(" and", max_tokens=40, json_schema='{"type": "boolean"}'))
    assert text in ("true", "false")
    with pytest.raises(ValueError, match=r"grammar: line 1, column 10: undefined rule 'x'"):
        s.generate("a", grammar="root ::= x")
    with pytest.raises(ValueError, match=r"json_schema: /properties/a: 'multipleOf' is not supported"):
        s.generate("a", json_schema={"properties": {"a": {"type": "integer", "multipleOf": 2}}})
    with pytest.raises(ValueError, match="not both"):
        s.generate("a", grammar='root ::= "a"', json_schema={})


def test_cli_grammar_and_json_schema(tmp_path):
    tova_bin = BUILD / "bin" / "tova"
    schema = SOURCE / "tests/data/grammar/person.schema.json"
    v = validator()
    for seed in range(5):
        r = subprocess.run([str(tova_bin), "run", "-t", "1", "-p", "Once", "-n", "600", "--temp", "1",
                            "--top-k", "0", "--top-p", "1", "--min-p", "0", "-s", str(seed),
                            "--no-display-prompt", "--json-schema", str(schema)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        obj = json.loads(r.stdout)
        assert not [e.message for e in v.iter_errors(obj)], r.stdout
    bad = tmp_path / "bad.gbnf"
    bad.write_text('root ::= "a" item\nitem ::= [0-9\n')
    r = subprocess.run([str(tova_bin), "run", "-p", "Once", "--grammar", str(bad)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert r.stderr.splitlines() == [
        f"tova: error: --grammar {bad}: grammar: line 2, column 10: unterminated character class "
        "(in rule 'item')"], r.stderr
    bad_schema = tmp_path / "bad.json"
    bad_schema.write_text('{"type": "object", "properties": {"x": {"not": {}}}}')
    r = subprocess.run([str(tova_bin), "run", "-p", "Once", "--json-schema", str(bad_schema)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert r.stderr.splitlines() == [
        f"tova: error: --json-schema {bad_schema}: json_schema: /properties/x: 'not' is not "
        "supported"], r.stderr
