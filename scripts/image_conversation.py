#!/usr/bin/env python3
"""A 20-image conversation at a fixed budget beside the same conversation under `full`: K/V
allocated and held after images 1, 5, 10, 15 and 20 (issue 47), and the bounded policy again
with keep_images (--kv-keep-images: its K/V grows with every image kept). Each turn asks about
one image (the committed test images in turn) and answers 8 greedy tokens.

  PYTHONPATH=build/python python3 scripts/image_conversation.py [MODEL MMPROJ [POLICY BUDGET]]

Defaults: the gemma4 text fixture and the gemma4v mmproj fixture of tests/data, tova 64."""
import pathlib
import sys

import tova

DATA = pathlib.Path(__file__).resolve().parents[1] / "tests" / "data"
model = sys.argv[1] if len(sys.argv) > 2 else str(DATA / "arch" / "gemma4-f32.gguf")
mmproj = sys.argv[2] if len(sys.argv) > 2 else str(DATA / "vision" / "gemma4v-f32.gguf")
policy, budget = (sys.argv[3], int(sys.argv[4])) if len(sys.argv) > 4 else ("tova", 64)

e = tova.Engine(model, threads=1, mmproj=mmproj)
names = ["disc-64x48.png", "bars-50x30.jpg", "tall-40x130.png", "scene-300x200.jpg"]
images = [e.encode_image(str(DATA / "vision" / n)) for n in names]
print("| policy | after image | tokens seen | K/V allocated | K/V held | image rows held |")
print("|---|---:|---:|---:|---:|---:|")
# The bounded policy as it chooses, the same keeping every image (--kv-keep-images: image
# states held beside the budget, so K/V grows with each image), and `full`.
for p, k, keep in [(policy, budget, False), (policy, budget, True), ("full", 0, False)]:
    s = e.session(policy=p, budget=k, temperature=0, keep_images=keep, max_kept_images=20)
    for i in range(20):
        for _ in s.generate(f"Image {i + 1}: <__media__> What is it?", images=[images[i % 4]],
                            max_tokens=8):
            pass
        if i + 1 in (1, 5, 10, 15, 20):
            st = s.stats()
            label = (f"{p}:{k}" if k else p) + (" keep-images" if keep else "")
            rows = sum(kind["image_rows"] for kind in st["kinds"].values())
            print(f"| {label} | {i + 1} | {st['n_seen']} | {st['kv_capacity']} | {st['kv_held']} "
                  f"| {rows} |")
