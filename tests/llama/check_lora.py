#!/usr/bin/python3
"""LoRA adapters agree with llama.cpp (issue 32): llama.cpp (node-llama-cpp 3.21.1) applying
`kiln export --lora ADAPTER --format gguf`'s file at run time (createContext's lora.adapters)
to a base GGUF gives the greedy tokens of `kiln decode --ckpt BASE --lora ADAPTER`, 3 prompts
x 32 tokens. For each base of CASES (GPT-2; llama with grouped-query attention, whose GGUF
holds q and k rows permuted; qwen3 with q/k norm and an untied head), byte-level, 2 layers,
dim 64:

  kiln train --data tokenizer_mix.txt ... --out BASE; kiln export --type f32|q8_0 (BASE-F32.gguf, BASE-Q8_0.gguf)
  kiln train --init BASE-F32.gguf --lora-rank 8 --lora-alpha 16 on the text in capitals (PEFT's files)
  kiln train --init BASE-F32.gguf --lora-rank 4 --lora-targets c_proj|down_proj on it in small letters
  kiln export --ckpt BASE-F32.gguf --lora ADAPTER --format gguf --out LORA.gguf

and on the F32 and Q8_0 bases, kiln reading the adapter as PEFT's folder (and the GGUF on
F32) prints llama.cpp's tokens; also with a SCALE (PEFT:0.5 against llama.cpp's scale 0.5)
and with both adapters at once. The merged model (`kiln export --merge-lora --type f32|f16`)
decodes in llama.cpp to the adapter run's tokens, and `kiln decode` of the f16 merge to
llama.cpp's; a merge into Q8_0 (`--ckpt BASE-Q8_0.gguf --merge-lora --type q8_0`) keeps
`kiln eval`'s loss within 0.01 of `kiln eval --ckpt BASE-Q8_0.gguf --lora ADAPTER`. The
adapters must change llama.cpp's tokens (else nothing was tested), and llama.cpp must refuse
GPT-2's adapter in the layout of its own convert_lora_to_gguf.py (A and B swapped and
transposed: docs/quantization.md's pitfall), which kiln does not write.

The prompts are the first 3 cuts of 8 bytes (every 60) that select_prompts.py's rule calls
decisive for each adapted model's float64 reference, PEFT's arithmetic on the adapter's files
(adapted_reference.py), exact and with 8-bit activations, so no near tie can flip a token.

    check_lora.py --kiln PATH/kiln --work DIR
Exit 0: all equal; 1: a mismatch or a kiln error; 77: skipped (no npm peers or no torch).
"""
import os
import re
import shutil

import numpy as np

import adapted_reference
import gguf_file
import hf_folder
import peer_checks as pc
import peers

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "tokenizer_mix.txt")
STEPS = 32
TEXT_BYTES = 1024  # the base memorizes it: its continuations are decisive
SHAPE = ["--layers", "2", "--dim", "64", "--heads", "4", "--block", "64"]
TRAIN = ["--batch", "8", "--warmup", "10", "--eval-every", "0", "--log-every", "1000", "--seed", "1337"]
# the bases: GPT-2, the llama architecture (q/k rows permuted in its GGUF) with grouped-query
# attention, qwen3's q/k norm with an untied head
CASES = {"gpt2": [], "llama": ["--model", "llama", "--kv-heads", "2"],
         "qwen3": ["--model", "llama", "--kv-heads", "1", "--qk-norm", "--untied"]}


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
    pc.check(what, first is None, f"{len(got)} ids equal" if first is None else
             f"differs from token {first}: {got[first:first + 6]} against {want[first:first + 6]}")


def job(key, model, prompts, adapters=()):
    """A llama_cpp_greedy.mjs job: model with adapters [(gguf, scale)]."""
    return {"key": key, "model": model, "prompts": prompts, "n": STEPS,
            "lora": [{"filePath": f, "scale": s} for f, s in adapters]}


def train(a, w, name, flags, text):
    """The base (trained on text, exported at F32 and Q8_0) and two adapters trained on it:
    {"ckpt", "F32", "Q8_0", "peft", "second"}, or None after a failed check."""
    f = {"ckpt": os.path.join(w, "base", "model.safetensors"), "F32": os.path.join(w, "base-F32.gguf"),
         "Q8_0": os.path.join(w, "base-Q8_0.gguf"), "peft": os.path.join(w, "peft"), "second": os.path.join(w, "peft2")}
    data = {"text": text, "caps": text.upper()}
    for k, v in data.items():
        data[k] = os.path.join(w, k + ".txt")
        with open(data[k], "wb") as out:
            out.write(v)
    if run(a, "train", "--data", data["text"], "--out", os.path.dirname(f["ckpt"]), "--backend", "cpu", "--steps",
           "1000", "--lr", "3e-3", *SHAPE, *TRAIN, *flags) is None:
        return None
    for t in ("F32", "Q8_0"):
        if run(a, "export", "--ckpt", f["ckpt"], "--format", "gguf", "--type", t.lower(), "--out", f[t]) is None:
            return None
    # the adapters: the text in capitals on every linear, and the text again on one kind
    for key, d, lora, steps in (("peft", "caps", ["--lora-rank", "8", "--lora-alpha", "16"], "600"),
                                ("second", "text", ["--lora-rank", "4", "--lora-alpha", "8", "--lora-targets",
                                                    "c_proj" if name == "gpt2" else "down_proj"], "200")):
        if run(a, "train", "--init", f["F32"], *lora, "--data", data[d], "--out", f[key], "--backend", "cpu",
               "--steps", steps, "--lr", "1e-2", *TRAIN) is None:
            return None
    f["eval"] = data["caps"]
    return f


def references(a, w, name, f):
    """Each configuration's (exact, rounded) float64 reference."""
    configs = {"adapter": [(f["peft"], 1.0)], "scale 0.5": [(f["peft"], 0.5)],
               "two adapters": [(f["peft"], 1.0), (f["second"], 1.0)]}
    if name == "gpt2":
        return {k: adapted_reference.gpt2(f["ckpt"], ads) for k, ads in configs.items()}
    hf = os.path.join(w, "base-hf")
    if run(a, "export", "--ckpt", f["ckpt"], "--format", "hf", "--out", hf) is None:
        return None
    return {k: adapted_reference.llama(hf, ads, os.path.join(w, "reference-" + k.replace(" ", "-")))
            for k, ads in configs.items()}


def choose(name, refs, text):
    """Per configuration, 3 prompts decisive for its reference (cuts of 8 bytes of the text in
    capitals, then of the text), or None after a failed check."""
    candidates = [list(t[o:o + 8]) for t in (text.upper(), text) for o in range(0, len(t) - 8, 20)]
    chosen = {}
    for k, ref in refs.items():
        prompts, low = adapted_reference.decisive_prompts([ref], candidates)
        if len(prompts) < 3:
            pc.check(f"{name} {k}: decisive prompts", False, f"only {len(prompts)} of 3 among {len(candidates)}")
            return None
        print(f"{name} {k}: 3 prompts decisive for its float64 reference (smallest margin {low:.3f})")
        chosen[k] = prompts
    return chosen


def exports(a, w, f):
    """The adapters as LoRA GGUF and the merged models; {name: path} or None."""
    e = {"gguf": os.path.join(w, "lora.gguf"), "gguf2": os.path.join(w, "lora2.gguf"),
         "merged f32": os.path.join(w, "merged-f32.gguf"), "merged f16": os.path.join(w, "merged-f16.gguf")}
    argvs = [("--lora", f["peft"], "--out", e["gguf"]), ("--lora", f["second"], "--out", e["gguf2"])]
    argvs += [("--lora", f["peft"], "--merge-lora", "--type", t, "--out", e["merged " + t]) for t in ("f32", "f16")]
    for argv in argvs:
        if run(a, "export", "--ckpt", f["F32"], "--format", "gguf", *argv) is None:
            return None
    return e


def converter_layout(peft, path):
    """GPT-2's adapter as llama.cpp's convert_lora_to_gguf.py lays it out: GPT-2's converter
    transposes each Conv1D weight, and transposing B A swaps and transposes the pair (lora_a
    = B^T, lora_b = A^T), which llama.cpp's loader refuses ("incorrect shape")."""
    base = {"attn.c_attn": "attn_qkv", "attn.c_proj": "attn_output", "mlp.c_fc": "ffn_up", "mlp.c_proj": "ffn_down"}
    t, tensors = hf_folder.read_safetensors(os.path.join(peft, "adapter_model.safetensors")), []
    for name in sorted(t):
        if name.endswith(".lora_A.weight"):
            layer, module = name[len("base_model.model.transformer.h."):-len(".lora_A.weight")].split(".", 1)
            pair = (t[name.replace(".lora_A.", ".lora_B.")].T, t[name].T)
            for suffix, m in zip(("a", "b"), pair):
                m = np.ascontiguousarray(m, np.float32)
                tensors.append((f"blk.{layer}.{base[module]}.weight.lora_{suffix}", 0, list(m.shape), m.tobytes()))
    kv = gguf_file.kvs([("general.architecture", "gpt2"), ("general.type", "adapter"), ("adapter.type", "lora"),
                        ("adapter.lora.alpha", 16.0)])
    gguf_file.write_file(path, kv, tensors)


def trained_case(a, name, flags, text):
    """(llama.cpp jobs, checks run on their tokens) for one base."""
    w = os.path.join(a.work, name)
    shutil.rmtree(w, ignore_errors=True)
    os.makedirs(w)
    f = train(a, w, name, flags, text)
    refs = f and references(a, w, name, f)
    chosen = refs and choose(name, refs, text)
    e = chosen and exports(a, w, f)
    if not e:
        return [], []
    p, ps, p2 = chosen["adapter"], chosen["scale 0.5"], chosen["two adapters"]
    jobs = [job(f"{name} F32", f["F32"], p, [(e["gguf"], 1.0)]), job(f"{name} Q8_0", f["Q8_0"], p, [(e["gguf"], 1.0)]),
            job(f"{name} base", f["F32"], p), job(f"{name} scale 0.5", f["F32"], ps, [(e["gguf"], 0.5)]),
            job(f"{name} two adapters", f["F32"], p2, [(e["gguf"], 1.0), (e["gguf2"], 1.0)]),
            job(f"{name} merged f32", e["merged f32"], p), job(f"{name} merged f16", e["merged f16"], p)]
    if name == "gpt2":
        converted = os.path.join(w, "converter-layout.gguf")
        converter_layout(f["peft"], converted)
        jobs.append({**job("gpt2 converter layout", f["F32"], p[:1], [(converted, 1.0)]), "refusal": True})

    def checks(want):
        changed = sum(want[f"{name} base"][i] != want[f"{name} F32"][i] for i in range(3))
        pc.check(f"{name}: the adapter changes llama.cpp's tokens", changed > 0, f"on {changed} of 3 prompts")
        for i in range(3):
            for t in ("F32", "Q8_0"):
                compare(f"{name} {t} prompt {i}: kiln decode --lora PEFT = llama.cpp with the LoRA GGUF",
                        kiln_tokens(a, f[t], p[i], [f["peft"]]), want[f"{name} {t}"][i])
            compare(f"{name} F32 prompt {i}: kiln decode --lora GGUF = llama.cpp",
                    kiln_tokens(a, f["F32"], p[i], [e["gguf"]]), want[f"{name} F32"][i])
            compare(f"{name} F32 prompt {i}: kiln --lora PEFT:0.5 = llama.cpp at scale 0.5",
                    kiln_tokens(a, f["F32"], ps[i], [f["peft"] + ":0.5"]), want[f"{name} scale 0.5"][i])
            compare(f"{name} F32 prompt {i}: two adapters at once = llama.cpp's",
                    kiln_tokens(a, f["F32"], p2[i], [f["peft"], f["second"]]), want[f"{name} two adapters"][i])
            for t in ("f32", "f16"):
                compare(f"{name} prompt {i}: llama.cpp on the merged {t} export = llama.cpp with the adapter",
                        want[f"{name} merged {t}"][i], want[f"{name} F32"][i])
            compare(f"{name} prompt {i}: kiln decode of the merged f16 export = llama.cpp's",
                    kiln_tokens(a, e["merged f16"], p[i]), want[f"{name} merged f16"][i])
        quant_merge(a, name, w, f)
        if name == "gpt2":
            refused = want["gpt2 converter layout"]["refused"]
            pc.check("gpt2: llama.cpp refuses convert_lora_to_gguf.py's layout of the same adapter", bool(refused),
                     refused or "it loaded it")
    return jobs, [checks]


def eval_loss(a, *argv):
    out = run(a, "eval", *argv, "--backend", "cpu")
    m = re.search(r"loss ([0-9.]+)", out or "")
    return float(m.group(1)) if m else None


def quant_merge(a, name, w, f):
    """A merge into Q8_0 keeps the adapter run's eval loss within 0.01 (and the adapter moves it)."""
    merged = os.path.join(w, "merged-q8_0.gguf")
    if run(a, "export", "--ckpt", f["Q8_0"], "--lora", f["peft"], "--merge-lora", "--format", "gguf", "--type",
           "q8_0", "--out", merged) is None:
        return
    with_adapter = eval_loss(a, "--ckpt", f["Q8_0"], "--lora", f["peft"], "--data", f["eval"])
    merged_loss = eval_loss(a, "--ckpt", merged, "--data", f["eval"])
    base = eval_loss(a, "--ckpt", f["Q8_0"], "--data", f["eval"])
    if None in (with_adapter, merged_loss, base):
        return
    pc.check(f"{name}: eval loss of the Q8_0 merge against the adapter on the Q8_0 base",
             abs(merged_loss - with_adapter) <= 0.01 and abs(base - with_adapter) > 0.1,
             f"merged {merged_loss:.4f}, adapter {with_adapter:.4f} (base alone {base:.4f})")


def main():
    a = pc.args(need_models=False)
    if not a.work:
        pc.skip("check_lora.py needs --work DIR")
    found = peers.find()
    if not found.get("node_llama_cpp"):
        pc.skip(found["why"])
    with open(DATA, "rb") as f:
        text = f.read()[:TEXT_BYTES]
    jobs, checks = [], []
    for name, flags in CASES.items():
        j, c = trained_case(a, name, flags, text)
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
