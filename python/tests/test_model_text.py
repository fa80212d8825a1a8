"""A model's text as Python sees it (issue 49): bytes that are not UTF-8 become U+FFFD, as tova
serve sends them, never a UnicodeDecodeError; tova.parse_tool_calls takes an answer apart as
tova serve does, the issue's reproducer included. Quick: the bundled stories260K."""

import json

import pytest

import tova

R = "\ufffd"
# Issue 49's reproducer: a Qwen3-Coder call whose parameter value is "1" and three 0xFF bytes.
REPRO = (b"<tool_call>\n<function=f>\n<parameter=s>\n1\xff\xff\xff\n</parameter>\n</function>\n"
         b"</tool_call>")
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {
    "type": "object", "properties": {"s": {"type": "string"}}}}}]


@pytest.fixture(scope="module")
def engine():
    return tova.Engine(threads=1)


def test_the_reproducer_is_a_call_with_its_bytes_replaced():
    for tools in (TOOLS, None):
        r = tova.parse_tool_calls(REPRO, "qwen3_coder", tools=tools)
        assert r["content"] == ""
        assert len(r["calls"]) == 1
        call = r["calls"][0]
        assert call["name"] == "f"
        assert json.loads(call["arguments"]) == {"s": "1" + R * 3}


def test_every_format_and_content_get_the_same_replacement():
    cases = [
        ("hermes", b'<tool_call>{"name": "f", "arguments": {"s": "\xc3"}}</tool_call>', {"s": R}),
        ("llama3", b'{"name": "f", "parameters": {"s": "\xe2\x82"}}', {"s": R}),
        ("mistral", b'[TOOL_CALLS][{"name": "f", "arguments": {"s": "\x80"}}]', {"s": R}),
        ("mistral_args", b'[TOOL_CALLS]f[ARGS]{"s": "\xed\xa0\x80"}', {"s": R * 3}),
        ("harmony", b'<|channel|>commentary to=functions.f<|message|>{"s": "\xf0\x9f\x98"}<|call|>',
         {"s": R}),
        ("lfm2", b"<|tool_call_start|>[f(s='\xe2\x82')]<|tool_call_end|>", {"s": R}),
    ]
    for fmt, text, args in cases:
        r = tova.parse_tool_calls(text, fmt)
        assert [c["name"] for c in r["calls"]] == ["f"], fmt
        assert json.loads(r["calls"][0]["arguments"]) == args, fmt
    # Text that is no call: content, its bytes replaced as Python's own decoder replaces them.
    raw = b"a\xff<tool_call>\xc3 b\xe2\x82"
    r = tova.parse_tool_calls(raw, "hermes")
    assert r["calls"] == []
    assert r["content"] == raw.decode("utf-8", "replace")
    assert tova.parse_tool_calls("plain str", "none") == {"content": "plain str", "calls": []}
    with pytest.raises(ValueError, match="unknown tool-call format 'xml'"):
        tova.parse_tool_calls("x", "xml")


def test_generated_pieces_are_str_whatever_bytes_the_model_emits(engine):
    # At a high temperature the bundled model emits its byte tokens (<0x80>..<0xFF>) in any
    # order: ill-formed UTF-8 in most answers. Every piece is a str; none raises.
    pieces = 0
    replaced = 0
    for seed in range(6):
        s = engine.session(temperature=20.0, top_k=0, top_p=1.0, min_p=0.0, seed=seed)
        for piece in s.generate("Once", max_tokens=48):
            assert isinstance(piece, str)
            piece.encode("utf-8")  # well-formed: no lone surrogates either
            pieces += 1
            replaced += piece.count(R)
    assert pieces > 0
    print(f"{pieces} pieces, {replaced} replacement characters")
