"""The Python module against the library's other front doors: the same greedy text as
`tova run`, the same ppl records as `tova ppl --out`, session files shared with `tova run
--session`; numpy logits without a copy; the GIL released during compute; errors as
exceptions that name the culprit. Quick: the bundled stories260K."""

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import pytest

import tova

BUILD = pathlib.Path(tova.__file__).resolve().parents[2]
TOVA = BUILD / "bin" / "tova"
SHARED = pathlib.Path(os.environ.get("TOVA_SHARED_DIR", BUILD.parent.parent / "shared"))


@pytest.fixture(scope="module")
def engine():
    return tova.Engine(threads=1)


def run_cli(*args):
    r = subprocess.run([str(TOVA), *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r


def text_of(gen):
    return "".join(gen)


def test_engine_describes_the_model_and_round_trips_text(engine):
    assert engine.path.endswith("stories260K.gguf")
    assert engine.n_vocab == 512
    assert engine.architecture == "llama"
    assert engine.n_threads == 1
    ids = engine.tokenize("Once upon a time")
    assert ids[0] == 1  # BOS
    assert engine.detokenize(ids) == "Once upon a time"
    assert engine.tokenize("Once upon a time", add_bos=False) == ids[1:]


def test_errors_name_the_culprit(engine):
    with pytest.raises(RuntimeError, match="/nonexistent/m.gguf"):
        tova.Engine("/nonexistent/m.gguf")
    with pytest.raises(RuntimeError, match="lru"):
        engine.session(policy="lru", budget=8)
    # The library names the field; Python puts the keyword there.
    with pytest.raises(RuntimeError, match="^top_p must be > 0"):
        engine.session(top_p=0)
    with pytest.raises(RuntimeError, match="^budget: KV policy 'tova' needs at least 1 state"):
        engine.session(policy="tova", budget=0)
    with pytest.raises(RuntimeError, match=r"^kv_type: \+rot needs a quantized type"):
        engine.session(kv_type="f16+rot")
    s = engine.session()
    with pytest.raises(ValueError, match="9999"):
        s.feed([1, 9999])
    with pytest.raises(RuntimeError, match="no logits"):
        s.logits()
    with pytest.raises(ValueError, match=r"^tokens: 9999 is outside the vocabulary \[0, 512\)"):
        engine.detokenize([9999])


def test_policies_are_the_registry():
    names = tova.policies()
    for p in ("full", "window", "tova", "h2o", "sink:N", "expected-attention:W", "rkv:B",
              "BASE+merge"):
        assert p in names


def test_greedy_generation_equals_tova_run(engine):
    s = engine.session(policy="tova", budget=16, temperature=0)
    gen = s.generate("Once upon a time", max_tokens=40)
    text = text_of(gen)
    assert gen.finish_reason in ("stop", "length")
    cli = run_cli("run", "-t", "1", "--temp", "0", "-n", "40", "-p", "Once upon a time",
                  "--kv-policy", "tova", "--kv-budget", "16", "--no-display-prompt")
    assert text == cli.stdout.rstrip("\n")
    stats = gen.stats()
    assert stats["n_prompt"] == 5
    assert stats["n_generated"] <= 40


def test_stop_strings_and_limits(engine):
    s = engine.session(temperature=0)
    full = text_of(s.generate("One day, a little girl", max_tokens=60))
    assert "." in full
    s = engine.session(temperature=0)
    gen = s.generate("One day, a little girl", max_tokens=60, stop=["."])
    assert text_of(gen) == full[: full.index(".")]
    assert gen.finish_reason == "stop"
    s = engine.session(temperature=0)
    gen = s.generate("One day", max_tokens=3, ignore_eos=True)
    assert len(list(gen)) <= 3 and gen.finish_reason == "length"
    assert gen.stats()["n_generated"] == 3
    # A `full` session under a context of 10: the prompt (3) and 6 more.
    s = engine.session(temperature=0)
    gen = s.generate("Once upon", max_tokens=-1, ignore_eos=True, max_context=10)
    list(gen)
    assert gen.finish_reason == "length" and s.n_seen + 1 == 10


def test_logits_are_a_read_only_view_without_a_copy(engine):
    s = engine.session(temperature=0)
    s.feed(engine.tokenize("Once upon a time"))
    a = s.logits()
    assert a.dtype == np.float32 and a.shape == (512,)
    assert not a.flags.writeable and not a.flags.owndata
    assert np.shares_memory(a, s.logits())
    kept = a.copy()
    greedy = int(np.argmax(a))
    assert s.sample() == greedy
    assert s.decode() == greedy  # samples, feeds
    assert not np.array_equal(a, kept)  # the view follows the session's buffer
    assert s.history[-1] == greedy


def test_stats_hold_the_budget(engine):
    s = engine.session(policy="tova", budget=16, temperature=0)
    s.feed(engine.tokenize("Once upon a time there was a little girl named Lily. She loved " * 3))
    st = s.stats()
    assert st["policy"] == "tova" and st["budget"] == 16
    assert st["cache"] == "tova k=16 exact f32"
    assert len(st["layers"]) == 5
    assert all(l["n_held"] == 16 for l in st["layers"])
    assert all(l["n_evicted"] == st["n_seen"] - 16 for l in st["layers"])
    assert 0 < st["kv_held"] <= st["kv_capacity"]
    assert engine.session().stats()["budget"] is None
    # One kind of layer state here: K/V the policy bounds.
    assert list(st["kinds"]) == ["bounded"]
    b = st["kinds"]["bounded"]
    assert b["n_layer"] == 5 and b["limit"] == 16 and b["max_held"] == 16
    assert b["bytes"] == st["kv_capacity"] and b["held_bytes"] == st["kv_held"]
    assert all(l["kind"] == "bounded" for l in st["layers"])


def test_stats_by_layer_kind_on_a_model_with_window_layers():
    # The gemma3 fixture: five sliding-window layers (window 16) and one global layer.
    gemma = tova.Engine(str(BUILD.parent / "tests" / "data" / "arch" / "gemma3-f32.gguf"), threads=1)
    s = gemma.session(policy="tova", budget=12)
    s.feed([1 + i * 7 % 200 for i in range(60)])
    st = s.stats()
    w, b = st["kinds"]["window"], st["kinds"]["bounded"]
    assert (w["n_layer"], w["limit"]) == (5, 16) and 0 < w["max_held"] <= 16
    assert (b["n_layer"], b["limit"]) == (1, 12) and b["max_held"] == 12
    assert w["bytes"] + b["bytes"] == st["kv_capacity"]
    assert [l["kind"] for l in st["layers"]] == ["window"] * 5 + ["bounded"]


def test_stats_list_the_recurrent_layers_of_a_hybrid_model():
    # The qwen35 fixture: three Gated DeltaNet layers before each attention layer, twice.
    qwen = tova.Engine(str(BUILD.parent / "tests" / "data" / "arch" / "qwen35-f32.gguf"), threads=1)
    s = qwen.session(policy="tova", budget=8)
    s.feed([1 + i * 7 % 200 for i in range(40)])
    st = s.stats()
    assert [l["kind"] for l in st["layers"]] == (["recurrent"] * 3 + ["bounded"]) * 2
    assert all(l["n_held"] == 0 and l["n_evicted"] == 0
               for l in st["layers"] if l["kind"] == "recurrent")
    assert all(l["n_held"] == 8 for l in st["layers"] if l["kind"] == "bounded")
    r, b = st["kinds"]["recurrent"], st["kinds"]["bounded"]
    assert (r["n_layer"], r["limit"], r["rows"]) == (6, 0, 0)
    assert r["bytes"] == r["held_bytes"] == 6 * (128 * 3 + 4 * 16 * 16) * 4
    assert (b["n_layer"], b["limit"], b["max_held"]) == (2, 8, 8)
    assert r["bytes"] + b["bytes"] == st["kv_capacity"]


def test_stats_list_the_convolution_layers_of_lfm2_as_recurrent():
    # The lfm2 fixture: gated short convolutions, attention at layers 2 and 5; each convolution
    # layer keeps the last 2 inputs of its 64 channels.
    lfm2 = tova.Engine(str(BUILD.parent / "tests" / "data" / "arch" / "lfm2-f32.gguf"), threads=1)
    s = lfm2.session(policy="tova", budget=8)
    s.feed([1 + i * 7 % 200 for i in range(40)])
    st = s.stats()
    assert [l["kind"] for l in st["layers"]] == ["recurrent", "recurrent", "bounded"] * 2
    r, b = st["kinds"]["recurrent"], st["kinds"]["bounded"]
    assert (r["n_layer"], r["limit"], r["rows"]) == (4, 0, 0)
    assert r["bytes"] == r["held_bytes"] == 4 * 64 * 2 * 4
    assert (b["n_layer"], b["limit"], b["max_held"]) == (2, 8, 8)
    assert r["bytes"] + b["bytes"] == st["kv_capacity"]


def test_stats_list_the_mamba2_layers_of_granitehybrid_as_recurrent():
    # The granitehybrid fixture: Mamba2 layers, attention at layers 2 and 5; each Mamba2 layer
    # keeps the last 3 inputs of x|B|C's 192 channels and a 32 x 16 state per head of 4.
    g = tova.Engine(str(BUILD.parent / "tests" / "data" / "arch" / "granitehybrid-f32.gguf"),
                    threads=1)
    s = g.session(policy="tova", budget=8)
    s.feed([1 + i * 7 % 200 for i in range(40)])
    st = s.stats()
    assert [l["kind"] for l in st["layers"]] == ["recurrent", "recurrent", "bounded"] * 2
    r, b = st["kinds"]["recurrent"], st["kinds"]["bounded"]
    assert (r["n_layer"], r["limit"], r["rows"]) == (4, 0, 0)
    assert r["bytes"] == r["held_bytes"] == 4 * (192 * 3 + 4 * 32 * 16) * 4
    assert (b["n_layer"], b["limit"], b["max_held"]) == (2, 8, 8)
    assert r["bytes"] + b["bytes"] == st["kv_capacity"]


def test_stats_list_the_shared_layers_of_a_gemma4_e_model():
    # The gemma4e fixture: window, window, global, twice; then three layers that read the K/V of
    # layers 4, 4 and 5 and hold none of their own.
    e = tova.Engine(str(BUILD.parent / "tests" / "data" / "arch" / "gemma4e-f32.gguf"), threads=1)
    s = e.session(policy="tova", budget=8)
    s.feed([1 + i * 7 % 200 for i in range(40)])
    st = s.stats()
    assert [l["kind"] for l in st["layers"]] == (["window"] * 2 + ["bounded"]) * 2 + ["shared"] * 3
    assert all(l["n_held"] == 0 and l["n_evicted"] == 0
               for l in st["layers"] if l["kind"] == "shared")
    assert all(l["n_held"] == 8 for l in st["layers"] if l["kind"] != "shared")
    sh = st["kinds"]["shared"]
    assert (sh["n_layer"], sh["bytes"], sh["rows"]) == (3, 0, 0)
    assert st["kinds"]["window"]["bytes"] + st["kinds"]["bounded"]["bytes"] == st["kv_capacity"]


def test_save_and_load_continue_exactly_and_match_tova_run(engine, tmp_path):
    whole = text_of(engine.session(policy="tova", budget=24, temperature=0)
                    .generate("Once upon a time", max_tokens=30, ignore_eos=True))
    s = engine.session(policy="tova", budget=24, temperature=0)
    first = text_of(s.generate("Once upon a time", max_tokens=12, ignore_eos=True))
    assert len(s.history) == 5 + 12  # the last generated token is queued
    path = str(tmp_path / "s.bin")
    assert s.save(path) > 0
    t = engine.load_session(path, temperature=0)
    assert t.cache == "tova k=24 exact f32"
    rest = text_of(t.generate(None, max_tokens=18, ignore_eos=True))
    assert first + rest == whole
    # The file is tova run's: it continues there too.
    cli = run_cli("run", "-t", "1", "--temp", "0", "-n", "5", "--session", path,
                  "--no-display-prompt", "--ignore-eos")
    assert cli.stdout.rstrip("\n") != ""


def test_clone_and_reset(engine):
    s = engine.session(policy="h2o", budget=12, temperature=0)
    s.feed(engine.tokenize("The dog ran to the park"))
    c = s.clone()
    assert text_of(c.generate(None, max_tokens=10)) == text_of(s.generate(None, max_tokens=10))
    s.reset()
    assert s.history == [] and s.n_seen == 0


def test_the_gil_is_released_while_feeding():
    e = tova.Engine(threads=1)
    s = e.session(policy="tova", budget=32)
    tokens = e.tokenize("Once upon a time there was a little girl named Lily. " * 300)
    span = {}

    def work():
        span["start"] = time.perf_counter()
        s.feed(tokens)
        span["end"] = time.perf_counter()

    ticks = []
    t = threading.Thread(target=work)
    t.start()
    while t.is_alive():
        ticks.append(time.perf_counter())
        time.sleep(0.001)
    t.join()
    start, end = span["start"], span["end"]
    assert end - start > 0.05, "the feed was too short to tell"
    # This thread ran while the other was inside feed: it had let go of the GIL.
    inside = [x for x in ticks if start + 0.2 * (end - start) < x < end - 0.2 * (end - start)]
    assert len(inside) > 3


def test_ppl_returns_the_records_of_tova_ppl(engine, tmp_path):
    tokens_file = SHARED / "golden" / "tokens-128.json"
    if not tokens_file.exists():
        pytest.skip(f"needs {tokens_file} (set TOVA_SHARED_DIR)")
    tokens = json.loads(tokens_file.read_text())
    if isinstance(tokens, dict):
        tokens = tokens["tokens"]
    out = tmp_path / "out"
    run_cli("ppl", "-t", "1", "--tokens", str(tokens_file), "--policies", "full,window,tova",
            "--budgets", "16,32", "--ctx", "64", "--out", str(out), "--no-plot")
    cli = json.loads((out / "results.json").read_text())
    py = tova.ppl(engine, tokens=tokens, policies=["full", "window", "tova"], budgets=[16, 32],
                  ctx=64)
    assert py["results"] == cli["results"]
    timing = {"sweep_seconds", "wall_seconds", "model", "tokens_file", "threads"}
    assert {k: v for k, v in py["header"].items() if k not in timing} == \
           {k: v for k, v in cli["header"].items() if k not in timing}
    stream = tova.ppl(engine, text="Once upon a time there was a cat. " * 20,
                      policies=["full", "tova"], budgets=[16], stream=True, window=32,
                      positions=["absolute", "gap"])
    assert stream["mode"] == "stream" and stream["n_tokens"] > 100
    assert len(stream["curves"]) == 3  # full, tova k=16 absolute, tova k=16 gap


def test_eval_returns_the_records_of_tova_eval(engine, tmp_path):
    out = tmp_path / "out"
    args = dict(lengths=[256], depths=[0, 100], samples=2, policies=["full", "window"],
                budgets=[32], max_new=4)
    run_cli("eval", "passkey", "-t", "1", "--lengths", "256", "--depths", "0,100", "--samples",
            "2", "--policies", "full,window", "--budgets", "32", "--max-new", "4", "--no-plot",
            "--out", str(out))
    cli = json.loads((out / "results.json").read_text())
    py = tova.eval(engine, "passkey", **args)
    assert len(py["records"]) == 2 * 2 and py["records"] == cli["records"]
    assert py["accuracy"] == cli["accuracy"]
    timing = {"eval_seconds", "wall_seconds", "model", "threads"}
    assert {k: v for k, v in py.items() if k not in timing} == \
           {k: v for k, v in cli.items() if k not in timing}
    # Warnings reach Python; errors are exceptions naming the culprit.
    with pytest.warns(UserWarning, match="budget 4000"):
        tova.eval(engine, "passkey", lengths=[256], samples=1, depths=[50],
                  policies=["window"], budgets=[4000], max_new=2)
    with pytest.raises(RuntimeError, match="unknown task 'pass_key'"):
        tova.eval(engine, ["pass_key"])


def test_type_hints_ship_with_the_module():
    pkg = pathlib.Path(tova.__file__).parent
    assert (pkg / "__init__.pyi").exists() and (pkg / "py.typed").exists()
    assert tova.Session.generate.__doc__ and tova.ppl.__doc__ and tova.Engine.__doc__
    assert tova.eval.__doc__


def test_the_readme_example_runs_as_written(tmp_path):
    root = pathlib.Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text()
    blocks = [b.split("```", 1)[0] for b in readme.split("```python\n")[1:]]
    assert blocks, "README.md has no python example"
    for code in blocks:
        r = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                           timeout=120, env={**os.environ})
        assert r.returncode == 0, r.stderr
        assert "bytes of K/V held" in r.stdout and "tova 16" in r.stdout


def test_speculative_decoding_gives_the_same_text_and_counts_its_drafts(engine):
    # ngram-simple on a repetitive prompt, and stories260K drafting for itself (every draft
    # its own greedy token): the text is the one decoding without speculation gives.
    prompt = "Once upon a time, there was a little girl named Lily. Once upon a time, there was a"
    plain = text_of(engine.session(temperature=0).generate(prompt, max_tokens=64))
    s = engine.session(temperature=0, spec_type="ngram-simple", spec_ngram_size_n=2,
                       spec_ngram_size_m=8)
    assert text_of(s.generate(prompt, max_tokens=64)) == plain
    sp = s.stats()["speculation"]
    assert sp["type"] == "ngram-simple" and sp["n_accepted"] <= sp["n_drafted"]
    drafted = tova.Engine(threads=1, draft_model=engine.path)
    s = drafted.session(temperature=0, spec_type="draft-simple", spec_draft_n_max=4,
                        spec_draft_p_min=0)
    assert text_of(s.generate(prompt, max_tokens=64)) == plain
    sp = s.stats()["speculation"]
    # Every draft is the target's own greedy token; only drafts still outstanding when the
    # generation ends (at max_tokens) go unused.
    assert sp["n_drafted"] > 0 and sp["acceptance"] > 0.9
    s = engine.session(temperature=0, spec_type="ngram-mod", spec_ngram_mod_n_match=2)
    assert text_of(s.generate(prompt, max_tokens=64)) == plain
    assert s.stats()["speculation"]["type"] == "ngram-mod"
    with pytest.raises(RuntimeError, match="--spec-draft-n-max 0"):
        engine.session(spec_type="ngram-simple", spec_draft_n_max=0)
    with pytest.raises(RuntimeError, match="has no multi-token prediction block"):
        engine.session(spec_type="draft-mtp")
    assert engine.mtp_bytes == 0 and engine.n_mtp_blocks == 0 and engine.weight_bytes > 0
