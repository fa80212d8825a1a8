"""Session.chat (a conversation rendered with the chat template, fed once) and tova.StateCache
(the library's prefix-state cache: held, spilled to a directory, continued). Quick: the bundled
stories260K, greedy."""

import pytest

import tova


@pytest.fixture(scope="module")
def engine():
    return tova.Engine(threads=1)


def greedy(engine, **kw):
    return engine.session(temperature=0, **kw)


HELLO = [{"role": "system", "content": "You tell stories."},
         {"role": "user", "content": "Once upon a time"}]


def test_chat_answers_what_generate_answers_on_the_rendered_prompt(engine):
    prompt = engine.chat_prompt(HELLO)
    # No template in stories260K: ChatML, as tova chat and tova serve use.
    assert prompt == engine.chat_prompt(HELLO, chat_template="chatml")
    assert engine.chat_prompt(HELLO, add_generation_prompt=False) != prompt
    s = greedy(engine)
    answer = "".join(s.chat(HELLO, max_tokens=12))
    r = greedy(engine)
    assert answer == "".join(r.generate(prompt, max_tokens=12))
    assert s.history == r.history


def test_a_second_turn_equals_the_whole_conversation_on_a_fresh_session(engine):
    s = greedy(engine, policy="tova", budget=32)
    first = "".join(s.chat(HELLO, max_tokens=10))
    turn2 = HELLO + [{"role": "assistant", "content": first},
                     {"role": "user", "content": "And then?"}]
    second = "".join(s.chat(turn2, max_tokens=10))
    fresh = greedy(engine, policy="tova", budget=32)
    assert second == "".join(fresh.chat(turn2, max_tokens=10))
    # Messages that do not extend the conversation start it afresh.
    other = [{"role": "user", "content": "A dog"}]
    again = greedy(engine, policy="tova", budget=32)
    assert "".join(s.chat(other, max_tokens=8)) == "".join(again.chat(other, max_tokens=8))
    assert s.history == again.history


def test_chat_errors_name_the_message(engine):
    with pytest.raises(ValueError, match=r"messages\[1\]: unknown key 'text'"):
        greedy(engine).chat([{"role": "user", "content": "hi"}, {"role": "user", "text": "x"}])
    with pytest.raises(RuntimeError, match="at least one message"):
        greedy(engine).chat([])
    with pytest.raises(RuntimeError, match="no-such-template"):
        greedy(engine).chat(HELLO, chat_template="no-such-template")


def test_state_cache_continues_a_held_state_exactly(engine):
    cache = tova.StateCache(engine)
    s = greedy(engine, policy="tova", budget=16)
    text = "".join(s.generate("Once upon a time there was a", max_tokens=8))
    cache.put(s, id="a")
    assert cache.stats()["n_held"] == 1
    prompt = s.history + engine.tokenize(" little dog", add_bos=False)
    c, reused = cache.session(prompt, policy="tova", budget=16, temperature=0)
    assert reused == len(s.history)
    assert cache.stats()["n_held"] == 0  # taken out
    fresh = greedy(engine, policy="tova", budget=16)
    assert "".join(c.generate(max_tokens=8)) == "".join(fresh.generate(prompt, max_tokens=8))
    assert text
    # Other cache options never continue it: a new session, nothing reused.
    cache.put(fresh)
    _, reused = cache.session(prompt + [5], policy="tova", budget=17, temperature=0)
    assert reused == 0


def test_state_cache_spills_to_a_directory_and_comes_back(engine, tmp_path):
    cache = tova.StateCache(engine, max_states=1, spill_dir=str(tmp_path))
    a, b = greedy(engine), greedy(engine)
    a.feed(engine.tokenize("One day a cat"))
    b.feed(engine.tokenize("The sun was hot"))
    cache.put(a)
    cache.put(b)  # a leaves memory for the directory
    st = cache.stats()
    assert (st["n_held"], st["n_spilled"], st["n_stored"]) == (1, 1, 1)
    assert list(tmp_path.glob("*.sess"))
    # A second cache on the same directory (another process would do the same) finds it.
    other = tova.StateCache(engine, spill_dir=str(tmp_path))
    assert other.stats()["n_stored"] == 1
    s, reused = other.session(a.history + [42], temperature=0)
    assert reused == len(a.history)
    assert other.stats()["n_restored"] == 1
    assert s.history == a.history + [42]


def test_state_cache_refuses_what_it_cannot_use(engine, tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(RuntimeError, match="spill_dir"):
        tova.StateCache(engine, spill_dir=str(f))
    cache = tova.StateCache(engine)
    chunked = engine.session(prefill="chunk:4", policy="tova", budget=8)
    chunked.feed(engine.tokenize("Once upon a time"))
    cache.put(chunked)
    assert cache.stats()["n_held"] == 0
