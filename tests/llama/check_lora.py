#!/usr/bin/python3
"""LoRA adapters agree with llama.cpp (issue 32): llama.cpp (node-llama-cpp 3.21.1) applying
`kiln export --lora ADAPTER --format gguf`'s file at run time (createContext's lora.adapters)
to a base GGUF gives the greedy tokens of `kiln decode --ckpt BASE --lora ADAPTER`, 3 prompts
x 32 tokens, on:

  - GPT-2: a byte-level GPT-2 that `kiln train` trained (2 layers, dim 64, on
    tests/data/tokenizer_mix.txt), exported at F32 and Q8_0; its adapter trained by
    `kiln train --init BASE-F32.gguf --lora-rank 8` on other text (when this kiln trains
    adapters; else PEFT's files with a random B: tests/llama/peft_adapter.py);
  - the Llama family: the fixture's llama (GQA 4/2; and 4/1 with llama3 rope scaling: q and k
    rows permuted in the file), qwen2 (biases) and qwen3 (q/k norm, head width 16) at F32 and
    Q8_0, each with a PEFT adapter of random B on every linear of its blocks.

kiln reads the adapter as PEFT's folder and as the LoRA GGUF (both checked). Also:
  - a SCALE (--lora PATH:0.5 against llama.cpp's scale 0.5) and two adapters at once;
  - the merged model: `kiln export --merge-lora --type f32` decodes in llama.cpp to the
    adapter run's tokens; at f16, to `kiln decode` of that file;
  - a merge into a quantized type: `kiln export --ckpt BASE-Q8_0.gguf --merge-lora --type
    q8_0`'s eval loss within 0.01 of `kiln eval --ckpt BASE-Q8_0.gguf --lora ADAPTER`.

    check_lora.py --models DIR --kiln PATH/kiln --work DIR
Exit 0: all equal; 1: a mismatch or a kiln error; 77: skipped (no npm peers, no torch, or no
fixture).
"""
import os
import re
import shutil
import subprocess

import numpy as np

import lora_reference
import models
import peer_checks as pc
import peers
import peft_adapter

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "tokenizer_mix.txt")
STEPS = 32
VARIANTS = ("llama_tied", "llama_untied", "qwen2_tied", "qwen3_untied")
SHAPE = ["--layers", "2", "--dim", "64", "--heads", "4", "--block", "64"]
TRAIN = ["--batch", "8", "--lr", "3e-3", "--warmup", "10", "--eval-every", "0", "--log-every", "1000", "--seed", "1337"]
RANK, ALPHA, B_STD = 8, 16, 0.05


def run(a, *argv):
    """kiln ARGV's stdout, or None after a failed check naming the command."""
    return pc.kiln_ok(a, "kiln " + " ".join(os.path.basename(x) if os.sep in x else x for x in argv), *argv)


def kiln_tokens(a, ckpt, prompt, loras=()):
    argv = ["decode", "--ckpt", ckpt, "--prompt-ids", ",".join(map(str, prompt)), "--max-new", str(STEPS),
            "--greedy", "--print-ids", "--ignore-eog", "--backend", "cpu"]
    for lora in loras:
        argv += ["--lora", lora]
    out = run(a, *argv)
    return None if out is None else [int(t) for t in out.split()]


def compare(what, got, want):
    if got is None:
        return
    first = next((j for j in range(max(len(got), len(want)))
                  if j >= len(got) or j >= len(want) or got[j] != want[j]), None)
    pc.check(what, first is None, f"{len(got)} ids equal llama.cpp's" if first is None else
             f"differs from token {first}: kiln {got[first:first + 6]} llama.cpp {want[first:first + 6]}")


def lora_job(key, model, prompts, adapters):
    """A llama_cpp_greedy.mjs job: model with adapters [(gguf, scale)]."""
    return {"key": key, "model": model, "prompts": prompts, "n": STEPS,
            "lora": [{"filePath": f, "scale": s} for f, s in adapters]}


def llama_case(a, name, v):
    """The fixture variant's adapter (PEFT and GGUF) and merged files; (jobs, checks): checks
    run once llama.cpp's tokens are in."""
    w = os.path.join(a.work, name)
    shutil.rmtree(w, ignore_errors=True)
    cfg = models.config(name)
    hd = cfg.get("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"])
    sizes = peft_adapter.shapes("llama", cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"],
                                hd, cfg["intermediate_size"])
    peft, second = os.path.join(w, "peft"), os.path.join(w, "peft2")
    seed = 1000 + VARIANTS.index(name)
    peft_adapter.write(peft, "llama", cfg["num_hidden_layers"], sizes, RANK, ALPHA, seed, B_STD)
    peft_adapter.write(second, "llama", cfg["num_hidden_layers"], {"mlp.down_proj": sizes["mlp.down_proj"]}, 4, 8,
                       seed + 50, 2 * B_STD)
    f32, q8 = v["gguf"]["F32"], v["gguf"].get("Q8_0")
    rng = np.random.default_rng(seed)
    candidates = v["prompts"] + [[int(t) for t in rng.integers(0, cfg["vocab_size"] - 1, int(rng.integers(5, 10)))]
                                 for _ in range(60)]
    refs = [lora_reference.llama(v["hf"]["F32"], ads, os.path.join(w, f"reference-{i}"))
            for i, ads in enumerate(configurations(peft, second))]
    prompts = choose(name, refs, candidates)
    return case(a, name, w, f32, q8, peft, second, prompts, eval_data=None) if prompts else ([], [])


def configurations(peft, second):
    """The adapted models the checks run: the adapter, at scale 0.5, with the second one."""
    return [[(peft, 1.0)], [(peft, 0.5)], [(peft, 1.0), (second, 1.0)]]


def choose(name, refs, candidates):
    """3 prompts decisive for every configuration's reference, or None after a failed check."""
    prompts, low = lora_reference.decisive_prompts(refs, candidates)
    if len(prompts) < 3:
        pc.check(f"{name}: decisive prompts", False, f"only {len(prompts)} of 3 among {len(candidates)} candidates")
        return None
    print(f"{name}: 3 prompts decisive for the adapted models' float64 references (smallest margin {low:.3f})")
    return prompts


def case(a, name, w, f32, q8, peft, second, prompts, eval_data):
    gguf, gguf2 = os.path.join(w, "lora.gguf"), os.path.join(w, "lora2.gguf")
    merged = {t: os.path.join(w, f"merged-{t}.gguf") for t in ("f32", "f16")}
    if run(a, "export", "--ckpt", f32, "--lora", peft, "--format", "gguf", "--out", gguf) is None or \
            run(a, "export", "--ckpt", f32, "--lora", second, "--format", "gguf", "--out", gguf2) is None:
        return [], []
    for t, path in merged.items():
        if run(a, "export", "--ckpt", f32, "--lora", peft, "--merge-lora", "--format", "gguf", "--type", t,
               "--out", path) is None:
            return [], []
    bases = {"F32": f32, **({"Q8_0": q8} if q8 else {})}
    jobs = [lora_job(f"{name} {t}", path, prompts, [(gguf, 1.0)]) for t, path in bases.items()]
    jobs += [lora_job(f"{name} F32 scale 0.5", f32, prompts, [(gguf, 0.5)]),
             lora_job(f"{name} F32 two adapters", f32, prompts, [(gguf, 1.0), (gguf2, 1.0)]),
             lora_job(f"{name} base", f32, prompts, []),
             *[lora_job(f"{name} merged {t}", path, prompts, []) for t, path in merged.items()]]

    def checks(want):
        changed = sum(want[f"{name} base"][i] != want[f"{name} F32"][i] for i in range(len(prompts)))
        pc.check(f"{name}: the adapter changes llama.cpp's tokens", changed > 0, f"on {changed} of {len(prompts)} prompts")
        for i, p in enumerate(prompts):
            for t, path in bases.items():
                compare(f"{name} {t} prompt {i}: kiln decode --lora PEFT", kiln_tokens(a, path, p, [peft]),
                        want[f"{name} {t}"][i])
            compare(f"{name} F32 prompt {i}: kiln decode --lora GGUF", kiln_tokens(a, f32, p, [gguf]),
                    want[f"{name} F32"][i])
            compare(f"{name} F32 prompt {i}: --lora PEFT:0.5", kiln_tokens(a, f32, p, [peft + ":0.5"]),
                    want[f"{name} F32 scale 0.5"][i])
            compare(f"{name} F32 prompt {i}: two adapters", kiln_tokens(a, f32, p, [peft, second]),
                    want[f"{name} F32 two adapters"][i])
            compare(f"{name} prompt {i}: llama.cpp on the merged f32 export gives the adapter run's tokens",
                    want[f"{name} merged f32"][i], want[f"{name} F32"][i])
            compare(f"{name} prompt {i}: llama.cpp on the merged f16 export gives the adapter run's tokens",
                    want[f"{name} merged f16"][i], want[f"{name} F32"][i])
            compare(f"{name} prompt {i}: kiln decode of the merged f16 export", kiln_tokens(a, merged["f16"], p),
                    want[f"{name} merged f16"][i])
        if q8 and eval_data:
            quant_merge(a, name, w, q8, peft, eval_data)
    return jobs, [checks]


def eval_loss(a, *argv):
    out = run(a, "eval", *argv, "--backend", "cpu")
    m = re.search(r"loss ([0-9.]+)", out or "")
    return float(m.group(1)) if m else None


def quant_merge(a, name, w, q8, peft, data):
    """A merge into Q8_0 keeps the adapter run's eval loss within 0.01."""
    merged = os.path.join(w, "merged-q8_0.gguf")
    if run(a, "export", "--ckpt", q8, "--lora", peft, "--merge-lora", "--format", "gguf", "--type", "q8_0",
           "--out", merged) is None:
        return
    with_adapter = eval_loss(a, "--ckpt", q8, "--lora", peft, "--data", data)
    merged_loss = eval_loss(a, "--ckpt", merged, "--data", data)
    base = eval_loss(a, "--ckpt", q8, "--data", data)
    if None in (with_adapter, merged_loss, base):
        return
    pc.check(f"{name}: eval loss of the Q8_0 merge against the adapter on the Q8_0 base",
             abs(merged_loss - with_adapter) <= 0.01 and abs(base - with_adapter) > 0.01,
             f"merged {merged_loss:.4f}, adapter {with_adapter:.4f} (base alone {base:.4f})")


def trains_adapters(a):
    r = subprocess.run([a.kiln, "train", "--help"], capture_output=True, text=True)
    return "--lora-rank" in r.stdout


def gpt2_case(a, text):
    """A trained byte-level GPT-2 at F32 and Q8_0 and its adapter: (jobs, checks)."""
    w = os.path.join(a.work, "gpt2")
    shutil.rmtree(w, ignore_errors=True)
    os.makedirs(w)
    run_dir = os.path.join(w, "base")
    if run(a, "train", "--data", DATA, "--out", run_dir, "--backend", "cpu", "--steps", "300", *SHAPE, *TRAIN) is None:
        return [], []
    f32, q8 = os.path.join(w, "base-F32.gguf"), os.path.join(w, "base-Q8_0.gguf")
    for t, path in (("f32", f32), ("q8_0", q8)):
        if run(a, "export", "--ckpt", os.path.join(run_dir, "model.safetensors"), "--format", "gguf", "--type", t,
               "--out", path) is None:
            return [], []
    peft, second = os.path.join(w, "peft"), os.path.join(w, "peft2")
    sizes = peft_adapter.shapes("gpt2", 64, 4, 4, 16, 256)
    if trains_adapters(a):  # the adapter kiln trains on the base GGUF, on text the base did not see
        other = os.path.join(w, "reversed.txt")
        with open(other, "wb") as f:
            f.write(text[::-1])
        if run(a, "train", "--init", f32, "--lora-rank", str(RANK), "--lora-alpha", str(ALPHA), "--data", other,
               "--out", peft, "--backend", "cpu", "--steps", "100", *TRAIN) is None:
            return [], []
        print("note gpt2: the adapter is kiln-trained (kiln train --init BASE-F32.gguf --lora-rank 8)")
    else:
        peft_adapter.write(peft, "gpt2", 2, sizes, RANK, ALPHA, 7, B_STD)
        print("note gpt2: this kiln trains no adapter yet: PEFT's files with a random B")
    peft_adapter.write(second, "gpt2", 2, {"attn.c_proj": sizes["attn.c_proj"]}, 4, 8, 8, 2 * B_STD)
    ckpt = os.path.join(run_dir, "model.safetensors")
    refs = [lora_reference.gpt2(ckpt, ads) for ads in configurations(peft, second)]
    prompts = choose("gpt2", refs, [list(text[o:o + 8]) for o in range(0, len(text) - 8, 60)])
    return case(a, "gpt2", w, f32, q8, peft, second, prompts, eval_data=DATA) if prompts else ([], [])


def main():
    a = pc.args()
    if not a.work:
        pc.skip("check_lora.py needs --work DIR")
    found = peers.find()
    if not found.get("node_llama_cpp"):
        pc.skip(found["why"])
    m = pc.manifest(a.models)
    with open(DATA, "rb") as f:
        text = f.read()
    jobs, checks = gpt2_case(a, text)
    for name in VARIANTS:
        j, c = llama_case(a, name, m["variants"][name])
        jobs += j
        checks += c
    want, err = peers.llama_cpp_greedy(found, jobs, a.work) if jobs else ({}, None)
    if err:
        pc.check("llama.cpp loads kiln's LoRA GGUF adapters", False, err)
    else:
        for c in checks:
            c(want)
    pc.finish()


if __name__ == "__main__":
    main()
