#!/usr/bin/python3
"""Training works: a model that `kiln train --model llama` trained exports as GGUF that
llama.cpp decodes to kiln's tokens (issue 30). For each run of RUNS (2 layers, dim 64,
4 heads, 2 KV heads, block 64, 400 steps on tests/data/tokenizer_mix.txt's bytes: the llama
architecture tied, qwen2's q/k/v biases with an untied head, qwen3's q/k norm):

  kiln train --model llama ... --out DIR
  kiln export --ckpt DIR/model.safetensors --format gguf --type f32|f16|q8_0 --out FILE.gguf

then on 3 prompts of 8 bytes cut from the training text, 32 greedy tokens each:
  - llama.cpp (node-llama-cpp) on FILE.gguf gives the tokens of
    `kiln decode --ckpt FILE.gguf --prompt-ids ... --max-new 32 --greedy --print-ids --ignore-eog`,
    at each type;
  - at f32 also those of kiln decode on the checkpoint itself (DIR/model.safetensors).
A small trained model holds near ties, where the 8-bit rounding of a Q8_0 product's
activations (llama.cpp's and kiln's alike) may flip a greedy choice for no bug. So each run's
prompts are the first 3 cuts (every 60 bytes) that select_prompts.py's rule calls decisive
on the float64 reference (tests/llama/reference.py reading the run's Hugging Face export):
every step won by at least 0.06 of the logits' spread, with and without that rounding, and 5
different tokens at least; fewer than 3 fails. The comparison stays exact; a mismatch says
the reference's margin at the step where the peers part.

    check_train_export.py --kiln PATH/kiln --work DIR
Exit 0: all equal; 1: a mismatch or a kiln error; 77: skipped (no npm peers or no torch).
"""
import os
import shutil

import torch

import peer_checks as pc
import peers
import select_prompts

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "tokenizer_mix.txt")
SHAPE = ["--layers", "2", "--dim", "64", "--heads", "4", "--kv-heads", "2", "--block", "64",
         "--steps", "400", "--batch", "8", "--lr", "3e-3", "--warmup", "10", "--eval-every", "0",
         "--log-every", "1000", "--seed", "1337"]
RUNS = {"llama": [], "qwen2-untied": ["--bias", "qkv", "--untied"], "qwen3": ["--qk-norm"]}
TYPES = ("f32", "f16", "q8_0")
PROMPTS, PROMPT_LEN, EVERY = 3, 8, 20
STEPS = select_prompts.STEPS  # 32


def run_kiln(a, *argv):
    """kiln ARGV; its stdout, or None after a failed check naming the command."""
    return pc.kiln_ok(a, f"kiln {' '.join(argv)}", *argv)


def train_and_export(a, name, flags):
    """The run's checkpoint and {type: GGUF path}, or None when kiln failed."""
    out = os.path.join(a.work, name)
    shutil.rmtree(out, ignore_errors=True)
    if run_kiln(a, "train", "--model", "llama", "--data", DATA, "--out", out, "--backend", "cpu", *SHAPE, *flags) is None:
        return None
    ckpt = os.path.join(out, "model.safetensors")
    files = {}
    for t in TYPES:
        files[t] = os.path.join(a.work, f"{name}-{t}.gguf")
        if run_kiln(a, "export", "--ckpt", ckpt, "--format", "gguf", "--type", t, "--out", files[t]) is None:
            return None
    return ckpt, files


def kiln_tokens(a, path, prompt):
    out = run_kiln(a, "decode", "--ckpt", path, "--prompt-ids", ",".join(map(str, prompt)), "--max-new", str(STEPS),
                   "--greedy", "--print-ids", "--ignore-eog", "--backend", "cpu")
    return None if out is None else [int(t) for t in out.split()]


def choose_prompts(a, name, ckpt, text):
    """(the float64 reference of the run, its 3 decisive prompts; their smallest margin printed),
    or None after a failed check."""
    folder = os.path.join(a.work, f"{name}-hf")
    if run_kiln(a, "export", "--ckpt", ckpt, "--format", "hf", "--out", folder) is None:
        return None
    exact, rounded = select_prompts.references(folder)
    chosen, low = [], float("inf")
    for o in range(0, len(text) - PROMPT_LEN, EVERY):
        found = select_prompts.decisive(exact, rounded, list(text[o:o + PROMPT_LEN]))
        if found:
            chosen.append(list(text[o:o + PROMPT_LEN]))
            low = min(low, found[1])
        if len(chosen) == PROMPTS:
            print(f"{name}: prompts at the reference's smallest margin {low:.3f} of the spread")
            return exact, chosen
    pc.check(f"{name}: decisive prompts", False, f"only {len(chosen)} of {PROMPTS} in the training text: train longer")
    return None


def compare(what, got, want, ref, prompt):
    """Exact equality of two token lists; on a difference, the margin where they part."""
    first = next((j for j in range(max(len(got), len(want)))
                  if j >= len(got) or j >= len(want) or got[j] != want[j]), None)
    if first is None:
        return pc.check(what, True, f"{len(got)} ids equal")
    note = ""
    if first < min(len(got), len(want)):
        _, m = ref.greedy(prompt + got[:first], 1)
        note = f"; the reference's margin there {m[0]:.4f} of the spread"
    pc.check(what, False, f"differs from token {first}: kiln {got[first:first + 6]} llama.cpp {want[first:first + 6]}{note}")


def main():
    a = pc.args(need_models=False)
    if not a.work:
        pc.skip("check_train_export.py needs --work DIR")
    found = peers.find()
    if not found.get("node_llama_cpp"):
        pc.skip(found["why"])
    torch.set_num_threads(1)
    with open(DATA, "rb") as f:
        text = f.read()
    runs = {}
    for name, flags in RUNS.items():
        r = train_and_export(a, name, flags)
        chosen = r and choose_prompts(a, name, r[0], text)
        if chosen:
            runs[name] = (*r, *chosen)
    jobs = [{"model": files[t], "prompts": prompts, "n": STEPS} for _, files, _, prompts in runs.values() for t in TYPES]
    want, err = peers.llama_cpp_greedy(found, jobs, a.work) if jobs else (None, None)
    if err:
        pc.check("llama.cpp loads kiln's GGUF exports", False, err)
    for name, (ckpt, files, ref, prompts) in runs.items():
        if not want:
            break
        for i, p in enumerate(prompts):
            for t in TYPES:
                compare(f"{name} {t} prompt {i}: kiln decode of the GGUF", kiln_tokens(a, files[t], p) or [],
                        want[files[t]][i], ref, p)
            compare(f"{name} f32 prompt {i}: kiln decode of the checkpoint", kiln_tokens(a, ckpt, p) or [],
                    want[files["f32"]][i], ref, p)
    pc.finish()


if __name__ == "__main__":
    main()
