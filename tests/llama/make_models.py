#!/usr/bin/python3
"""Writes the peer tests' models once per ctest run (the fixture llama_models), into OUT:

  OUT/<variant>/hf-F32, hf-F16      Hugging Face folders (config.json, model.safetensors and
                                    tokenizer.json)
  OUT/<variant>/hf-BF16             the same in BF16, sharded in two (model.safetensors.index.json)
  OUT/<variant>/<variant>-F32.gguf, -F16.gguf, -Q8_0.gguf
                                    GGUF files as convert_hf_to_gguf.py writes them (Q8_0 only
                                    where libggml-base.so is found among the npm peers)
  OUT/<variant>/batch.safetensors   "tokens" [1, 3, T + 1]: the three prompts and their greedy
                                    continuations, cut to T + 1 tokens (kiln dev parity's batch)
  OUT/<variant>/reference.safetensors  "logits" [3, T, V]: the float64 reference's logits of
                                    the batch's inputs (float64)
  OUT/manifest.json                 per variant: prompts, the reference's greedy tokens and
                                    margins, files; and the peers found
  OUT/llama_cpp.json                llama.cpp's greedy tokens of every GGUF file and prompt
                                    (node-llama-cpp; absent without the peers)

All of it from models.py's seeds and prompts; nothing random at run time. The prompts are
checked again here to be decisive (select_prompts.py chose them): a change of the weights
that makes them near ties fails loudly instead of making the peers disagree.

    make_models.py --out OUT
Exit 0: written; 1: an error; 77: no torch here.
"""
import argparse
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"skipped: {e} (needs Debian's python3-torch and python3-numpy)")
    sys.exit(77)
import gguf_file  # noqa: E402
import hf_folder  # noqa: E402
import models  # noqa: E402
import peers  # noqa: E402
import select_prompts  # noqa: E402

STEPS = select_prompts.STEPS
BATCH_T = 24  # kiln dev parity's T: inputs of 24 tokens, each row a prompt and its continuation


def write_variant(name, out, quantize):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    cfg, w = models.config(name), models.weights(name, models.seed(name))
    tok = models.tokenizer_json()
    hf_folder.write(os.path.join(d, "hf-F32"), cfg, w, "F32", tokenizer=tok)
    hf_folder.write(os.path.join(d, "hf-F16"), cfg, w, "F16", tokenizer=tok)
    hf_folder.write(os.path.join(d, "hf-BF16"), cfg, w, "BF16", shards=2, tokenizer=tok)
    ggufs = {}
    for t in ("F32", "F16", "Q8_0"):
        if t == "Q8_0" and quantize is None:
            continue
        ggufs[t] = os.path.join(d, f"{name}-{t}.gguf")
        gguf_file.write(ggufs[t], name, cfg, w, t, quantize)
    ref, rounded = select_prompts.references(os.path.join(d, "hf-F32"))
    prompts, greedy, margins = models.PROMPTS[name], [], []
    for p in prompts:
        found = select_prompts.decisive(ref, rounded, p)
        if not found:
            raise SystemExit(f"FAIL {name}: prompt {p} is no longer decisive (select_prompts.py: a greedy step "
                             f"won by < {select_prompts.MARGIN} of the logits' spread): rerun select_prompts.py")
        greedy.append(found[0])
        margins.append(found[1])
    rows = np.array([(p + g)[:BATCH_T + 1] for p, g in zip(prompts, greedy)], np.int64)
    hf_folder.write_safetensors(os.path.join(d, "batch.safetensors"), {"tokens": rows[None]})
    logits = ref.logits(torch.from_numpy(rows[:, :-1])).numpy()
    hf_folder.write_safetensors(os.path.join(d, "reference.safetensors"), {"logits": logits})
    return {"prompts": prompts, "greedy": greedy, "margins": margins, "gguf": ggufs,
            "hf": {t: os.path.join(d, f"hf-{t}") for t in hf_folder.DTYPES},
            "batch": os.path.join(d, "batch.safetensors"), "reference": os.path.join(d, "reference.safetensors")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.set_num_threads(1)
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    found = peers.find()
    quantize = gguf_file.Q8Quantizer(found["libggml_base"]) if found.get("libggml_base") else None
    manifest = {"peers": found, "variants": {n: write_variant(n, a.out, quantize) for n in models.VARIANTS}}
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"ok   {len(models.VARIANTS)} variants written to {a.out}")
    if not found.get("node_llama_cpp"):
        print(f"note llama.cpp's tokens not computed: {found['why']}")
        return 0
    jobs = [{"model": path, "prompts": v["prompts"], "n": STEPS}
            for v in manifest["variants"].values() for path in v["gguf"].values()]
    _, err = peers.llama_cpp_greedy(found, jobs, a.out)
    if err:
        print(f"FAIL llama.cpp (node-llama-cpp) did not decode the files: {err}")
        return 1
    print(f"ok   llama.cpp's greedy tokens of {len(jobs)} files x {len(models.PROMPTS['llama_tied'])} prompts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
