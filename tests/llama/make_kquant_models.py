#!/usr/bin/python3
"""Writes the K-quant decode checks' models once per ctest run (the fixture
llama_kquant_models), into OUT:

  OUT/<variant>/<variant>-F32.gguf      models.KQUANT_VARIANTS' random model, as convert writes it
  OUT/<variant>/<variant>-Q4_K_M.gguf, -Q5_K_M.gguf
                                        llama.cpp's own mixes of it (llama_model_quantize,
                                        llama_quantize.py): llama_k256's rows are multiples of
                                        256, so Q4_K, Q5_K and Q6_K throughout; qwen2_k192's are
                                        192 but for ffn_down's, so llama.cpp falls back to Q5_0,
                                        Q5_1 and Q8_0 beside the K formats of ffn_down
  OUT/manifest.json                     per variant: prompts, files and each file's tensor types,
                                        the reference's greedy tokens; "tolerate": 1 (below)
  OUT/llama_cpp.json                    llama.cpp's greedy tokens of every file and prompt

check_decode.py then runs kiln on each mix (llama_kquant_decode[_B]). The prompts are checked
here to be decisive for the weights the files hold (libggml-base's dequantize_row_* of each
tensor, a float64 reference of them, select_prompts.decisive) with the activations rounded to
8 bits in blocks of 256 (ggml's Q8_K, what a K-format product rounds them to) where a row
allows. Even so the peers' arithmetic differs (kiln's Vulkan and OpenCL products keep float
activations, llama.cpp's KV cache is f16): one prompt of the three per file may differ
("tolerate"), never two. llama.cpp itself must give the reference's tokens on two prompts of
three per file, or the files are not what the test thinks.

    make_kquant_models.py --out OUT            the fixture
    make_kquant_models.py --out DIR --select N choose models.PROMPTS' entries of the variants
                                               among N random prompts (pasted there by hand)
Exit 0: written; 1: an error; 77: no torch or no llama.cpp peers here.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

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
import llama_quantize  # noqa: E402
import models  # noqa: E402
import peers  # noqa: E402
import reference  # noqa: E402
import select_prompts  # noqa: E402

MIXES = ("Q4_K_M", "Q5_K_M")
TOLERATE = 1  # prompts per file whose tokens may differ from llama.cpp's (a flipped near tie)
# every format the fixture must hold, or it does not test what it says
MUST_HOLD = {"q4_K", "q5_K", "q6_K", "q5_0", "q5_1", "q8_0"}
# steps of 32 whose token the layers must change (against the model without them), so that
# the quantized products decide the tokens and not the embedding and the head alone
LAYERS_DECIDE = 8


class Q8KActivations(select_prompts.Q8Activations):
    """The reference with each projection's input rounded to 8 bits in blocks of 256 where
    the row allows (Q8_K), else of 32 (Q8_0, the fallbacks' activations)."""

    def round(self, x):
        return select_prompts.round_8bit(x, 256 if x.shape[-1] % 256 == 0 else 32)


def unpermute(w, n_head):
    """gguf_file.permute's inverse: llama.cpp's interleaved q or k rows back to HF's halves."""
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def held_weights(path, name, deq):
    """{HF name: float32 [out, in]}: the values a GGUF file of the variant holds."""
    cfg = models.config(name)
    hf_of = {gguf_file.gguf_name(hf): hf for hf in models.weights(name, models.seed(name))}
    _, tensors = gguf_file.read(path)
    out = {}
    for gname, (typ, shape, raw) in tensors.items():
        if gname not in hf_of:
            continue  # rope_freqs: the reference derives it from config.json
        a = deq(typ, shape, raw).numpy().astype(np.float32)
        hf = hf_of[gname]
        if cfg["model_type"] == "llama" and (".q_proj." in hf or ".k_proj." in hf):
            a = unpermute(a, cfg["num_attention_heads"] if ".q_proj." in hf else cfg["num_key_value_heads"])
        out[hf] = a
    return out


def references(path, name, deq):
    """(exact, rounded, bare) references of the weights a file holds; bare has no layers."""
    with tempfile.TemporaryDirectory() as d:
        hf_folder.write(d, models.config(name), held_weights(path, name, deq), "F32")
        exact, rounded, bare = reference.Reference(d), Q8KActivations(d), reference.Reference(d)
    bare.cfg = dict(bare.cfg, num_hidden_layers=0)
    return exact, rounded, bare


def decisive(refs, prompt):
    """select_prompts.decisive's (tokens, margin), where the layers change >= LAYERS_DECIDE
    of the tokens too; else None."""
    exact, rounded, bare = refs
    found = select_prompts.decisive(exact, rounded, prompt)
    if not found:
        return None
    alone, _ = bare.greedy(prompt, select_prompts.STEPS)
    return found if sum(a != b for a, b in zip(found[0], alone)) >= LAYERS_DECIDE else None


def tensor_types(path):
    _, tensors = gguf_file.read(path)
    return {n: gguf_file.GGML_BLOCKS[t][0] if t in gguf_file.GGML_BLOCKS else {0: "f32", 1: "f16"}[t]
            for n, (t, _, _) in tensors.items()}


def write_files(name, out, found):
    """The variant's F32 file and llama.cpp's mixes of it: {mix: path}."""
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    f32 = os.path.join(d, f"{name}-F32.gguf")
    gguf_file.write(f32, name, models.config(name), models.weights(name, models.seed(name)), "F32")
    files = {}
    for mix in MIXES:
        files[mix] = os.path.join(d, f"{name}-{mix}.gguf")
        llama_quantize.quantize(found, f32, files[mix], mix)
    return files


def check_variant(name, files, deq):
    """Each mix's prompts decisive for its weights: {mix: the reference's tokens per prompt}."""
    greedy = {}
    for mix, path in files.items():
        refs = references(path, name, deq)
        greedy[mix] = []
        for p in models.PROMPTS[name]:
            found = decisive(refs, p)
            if not found:
                raise SystemExit(f"FAIL {name} {mix}: prompt {p} is not decisive for the file's weights (a greedy "
                                 f"step won by < {select_prompts.MARGIN} of the logits' spread, or the layers "
                                 f"change < {LAYERS_DECIDE} tokens): rerun --select")
            greedy[mix].append(found[0])
    return greedy


def select(name, files, deq, candidates):
    """Prints the three most decisive of candidates random prompts for every mix of the variant."""
    refs = [references(path, name, deq) for path in files.values()]
    rng, good = np.random.default_rng(7), []
    for _ in range(candidates):
        p = [int(x) for x in rng.integers(0, models.VOCAB - 1, int(rng.integers(4, 10)))]
        found = [decisive(r, p) for r in refs]
        if all(found):
            good.append((min(f[1] for f in found), min(len(set(f[0])) for f in found), p))
    good.sort(reverse=True)
    print(f'    "{name}": {[g[2] for g in good[:3]]},  # margin {[round(g[0], 3) for g in good[:3]]}, '
          f'distinct {[g[1] for g in good[:3]]}, {len(good)} of {candidates} (seed {models.seed(name)})', flush=True)


def agree_with_reference(manifest, tokens):
    """llama.cpp's tokens against the reference's, per file: fails below 3 - TOLERATE of 3."""
    ok = True
    for name, v in manifest["variants"].items():
        for mix, path in v["gguf"].items():
            same = sum(a == b for a, b in zip(tokens[path], v["greedy"][mix]))
            good = same >= len(v["prompts"]) - TOLERATE
            ok &= good
            print(f"{'ok  ' if good else 'FAIL'} llama.cpp's tokens of {name} {mix} equal the float64 reference's "
                  f"of the file's weights on {same} of {len(v['prompts'])} prompts")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--select", type=int, metavar="N")
    a = ap.parse_args()
    torch.set_num_threads(1)
    found = peers.find()
    if not found.get("node_llama_cpp"):
        print(f"skipped: {found['why']}")
        return 77
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    deq = gguf_file.Dequantizer(found["libggml_base"])
    try:
        files = {name: write_files(name, a.out, found) for name in models.KQUANT_VARIANTS}
    except (RuntimeError, FileNotFoundError) as e:
        print(f"FAIL llama.cpp's quantizer: {e}")
        return 1
    if a.select:
        for name, f in files.items():
            select(name, f, deq, a.select)
        return 0
    types = {name: {mix: tensor_types(p) for mix, p in f.items()} for name, f in files.items()}
    held = {t for v in types.values() for m in v.values() for t in m.values()}
    if not MUST_HOLD <= held:
        print(f"FAIL llama.cpp's mixes hold {sorted(held)}, not all of {sorted(MUST_HOLD)}")
        return 1
    manifest = {"peers": found, "tolerate": TOLERATE, "variants": {
        name: {"prompts": models.PROMPTS[name], "gguf": f, "types": types[name],
               "greedy": check_variant(name, f, deq)} for name, f in files.items()}}
    with open(os.path.join(a.out, "manifest.json"), "w") as fh:
        json.dump(manifest, fh, indent=1)
    print(f"ok   {len(files)} variants x {len(MIXES)} mixes written to {a.out}, holding {', '.join(sorted(held))}")
    jobs = [{"model": p, "prompts": v["prompts"], "n": select_prompts.STEPS}
            for v in manifest["variants"].values() for p in v["gguf"].values()]
    tokens, err = peers.llama_cpp_greedy(found, jobs, a.out)
    if err:
        print(f"FAIL llama.cpp (node-llama-cpp) did not decode the files: {err}")
        return 1
    return 0 if agree_with_reference(manifest, tokens) else 1


if __name__ == "__main__":
    sys.exit(main())
