"""tova: run GGUF language models on the CPU with a bounded KV cache.

A compression policy bounds each layer's KV cache to k states ("Transformers are Multi-State
RNNs", arXiv 2401.06104): TOVA drops, at every step, the token the current query attends to
least. The same library drives `tova run`, `tova chat`, `tova serve` and this module.

    import tova
    engine = tova.Engine()                      # the bundled stories260K; or Engine(path, threads=4)
    s = engine.session(policy="tova", budget=64, temperature=0)
    for piece in s.generate("Once upon a time", max_tokens=50):
        print(piece, end="")
    s.stats()["kv_held"]                        # bytes of K/V the session holds
    for piece in s.chat([{"role": "user", "content": "Tell me a story"}], max_tokens=50):
        print(piece, end="")

    cache = tova.StateCache(engine, spill_dir="states")   # prefix reuse, spilled to disk
    cache.put(s)
    s2, reused = cache.session(s.history + engine.tokenize(" More.", add_bos=False))

    s = engine.session()
    s.feed(engine.tokenize("Once upon a time"))
    s.logits()                                  # numpy float32 [n_vocab], a view (no copy)

    tova.ppl(engine, text=open("book.txt").read(), policies=["full", "tova"], budgets=[64])
    tova.eval(engine, "passkey", lengths=[256], samples=4, policies=["full", "tova"], budgets=[32])
"""

from ._tova import Engine, Generator, Image, Session, StateCache, eval, parse_tool_calls, policies, ppl

__all__ = ["Engine", "Image", "Session", "Generator", "StateCache", "policies", "ppl", "eval",
           "parse_tool_calls"]
