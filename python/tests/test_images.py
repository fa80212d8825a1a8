"""Images through the Python module (issue 47): Engine(..., mmproj=...), images as paths, bytes
or encoded Images, the same greedy text as `tova run --mmproj --image`, a bounded session
through an image, errors as exceptions naming the culprit. Quick: the gemma4 text fixture and
the gemma4v mmproj fixture of tests/data."""

import pathlib
import subprocess

import pytest

import tova

BUILD = pathlib.Path(tova.__file__).resolve().parents[2]
TOVA = BUILD / "bin" / "tova"
DATA = BUILD.parent / "tests" / "data"
MODEL = str(DATA / "arch" / "gemma4-f32.gguf")
MMPROJ = str(DATA / "vision" / "gemma4v-f32.gguf")
DISC = DATA / "vision" / "disc-64x48.png"


@pytest.fixture(scope="module")
def engine():
    return tova.Engine(MODEL, threads=1, mmproj=MMPROJ)


def test_encode_paths_bytes_and_images(engine):
    assert engine.has_mmproj
    a = engine.encode_image(str(DISC))
    assert (a.width, a.height, a.n_tokens, a.n_embd) == (64, 48, 48, 64)
    b = engine.encode_image(DISC.read_bytes())
    assert b.id == a.id and b.encode_seconds == 0  # the same bytes: not encoded again
    assert engine.encode_image(a).id == a.id


def test_generate_matches_tova_run(engine):
    s = engine.session(temperature=0)
    text = "".join(s.generate("Once upon a time", images=[DISC.read_bytes()], max_tokens=6))
    r = subprocess.run([str(TOVA), "run", "-m", MODEL, "--mmproj", MMPROJ, "--image", str(DISC),
                        "-p", "Once upon a time", "-n", "6", "--temp", "0", "-t", "1",
                        "--no-display-prompt"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == text + "\n"


def test_a_bounded_session_through_an_image(engine):
    s = engine.session(policy="tova", budget=16, temperature=0)
    img = engine.encode_image(str(DISC))
    text = "".join(s.generate("A <__media__> and", images=[img], max_tokens=4))
    assert isinstance(text, str)
    st = s.stats()
    assert st["n_seen"] > img.n_tokens
    assert (st["n_images"], st["n_image_tokens"]) == (1, img.n_tokens)
    for k in st["kinds"].values():
        assert k["limit"] is None or k["max_held"] <= k["limit"], k


def test_errors_name_the_culprit(engine):
    with pytest.raises(Exception, match="not-here.png"):
        engine.encode_image("not-here.png")
    with pytest.raises(Exception, match="image"):
        engine.encode_image(b"not an image")
    s = engine.session(temperature=0)
    with pytest.raises(Exception, match="marker"):
        s.generate("one <__media__> two <__media__>", images=[str(DISC)])
    plain = tova.Engine(MODEL, threads=1)
    with pytest.raises(Exception, match="mmproj"):
        plain.encode_image(str(DISC))
    with pytest.raises(Exception, match="gemma4"):
        tova.Engine(str(DATA / "arch" / "gemma3-f32.gguf"), threads=1, mmproj=MMPROJ)


def test_keep_images(engine):
    """keep_images: the image's states are held beside the budget under tova k=16 (the image
    alone is 48 tokens), stats say so; more images than max_kept_images and a text-only engine
    are refused."""
    img = engine.encode_image(str(DISC))
    s = engine.session(policy="tova", budget=16, temperature=0, keep_images=True,
                       max_kept_images=1)
    "".join(s.generate("A <__media__> and", images=[img], max_tokens=24))
    st = s.stats()
    assert st["keep_images"] and st["n_images_held"] == 1
    assert "keep-images:1" in st["cache"]
    bounded = st["kinds"]["bounded"]
    assert bounded["image_rows"] == img.n_tokens * bounded["rows"] // bounded["max_held"]
    assert bounded["max_held"] == 16 + img.n_tokens
    with pytest.raises(Exception, match="kv-keep-images-max 1"):
        "".join(s.generate("<__media__> again", images=[img], max_tokens=1))
    with pytest.raises(Exception, match="mmproj"):
        tova.Engine(MODEL, threads=1).session(policy="tova", budget=16, keep_images=True)
