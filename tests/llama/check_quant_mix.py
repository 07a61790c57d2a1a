#!/usr/bin/python3
"""kiln's quantization mixes against llama.cpp's own quantizer (model/gpt/gpt_quant_mix.h):
llama_model_quantize of node-llama-cpp 3.21.1's libllama (the function behind llama-quantize,
llama.cpp 80fb11a; ctypes, one thread, no importance matrix) turns an F32 GGUF into Q4_K_M,
Q5_K_M, Q4_K_S and Q5_K_S files, and into the pure types (its --pure: Q4_K, Q5_K, Q6_K, Q5_0,
Q5_1, Q8_0, Q4_0, Q4_1); `kiln quantize --format TYPE` of the same F32 file must give every
tensor the type llama.cpp gave it and the same bytes, and write its general.file_type. The
models, random:
  - llama, tied, width 256, ffn 512, 8 layers: rows that are whole 256-value super-blocks,
    every layer rule (use_more_bits over 8 layers; Q4_K_S's first 4 attn_v), the tied
    token_embd quantized as the output head;
  - qwen2, untied (q/k/v biases), width 192, ffn 576, 4 layers: rows of 192 and 576, so
    every K type falls back (Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0) and the head's rule
    takes Q8_0;
  - gpt2 (kiln's own export, width 256, 4 layers), whose attn_qkv counts as attn_v and whose
    output.weight makes llama.cpp see an untied head: the mixes (kiln's pure types keep
    position_embd in f16 where llama.cpp leaves it f32, so they are not compared there).

    check_quant_mix.py --kiln PATH/kiln --work DIR
Exit 0: all equal; 1: a difference or a kiln error; 77: skipped (no npm peers)."""
import os
import shutil

import numpy as np

import gguf_file
import llama_quantize
import models
import peer_checks as pc
import peers

# kiln's types: llama_quantize's name for each (its FTYPE gives the llama_ftype), and whether
# llama-quantize runs it --pure
KINDS = {"q4_k_m": ("Q4_K_M", False), "q5_k_m": ("Q5_K_M", False), "q4_k_s": ("Q4_K_S", False),
         "q5_k_s": ("Q5_K_S", False), "q4_k": ("Q4_K", True), "q5_k": ("Q5_K", True), "q6_k": ("Q6_K", True),
         "q5_0": ("Q5_0", True), "q5_1": ("Q5_1", True), "q8_0": ("Q8_0", True), "q4_0": ("Q4_0", True),
         "q4_1": ("Q4_1", True)}
MIXES = ("q4_k_m", "q5_k_m", "q4_k_s", "q5_k_s")
TYPE_NAMES = {0: "F32", 1: "F16", **{t: b[0].upper() for t, b in gguf_file.GGML_BLOCKS.items()}}

LLAMA_MODELS = {
    "llama_256": dict(arch="llama", dim=256, heads=4, kv=2, ffn=512, layers=8, tied=True),
    "qwen2_192": dict(arch="qwen2", dim=192, heads=4, kv=2, ffn=576, layers=4, tied=False),
}


def read_tensors(path):
    """{name: (ggml type, shape, bytes)} of a GGUF file (gguf_file.read), and its
    general.file_type under the name "general.file_type" as (that number, None, b"")."""
    kvs, tensors = gguf_file.read(path)
    tensors["general.file_type"] = (kvs.get("general.file_type"), None, b"")
    return tensors


def llama_family_file(path, name, v):
    """An F32 GGUF of random weights (gguf_file.write: convert_hf_to_gguf.py's layout)."""
    C, H, KV, F = v["dim"], v["heads"], v["kv"], v["ffn"]
    D = C // H
    cfg = {"model_type": v["arch"], "vocab_size": models.VOCAB, "hidden_size": C, "intermediate_size": F,
           "num_hidden_layers": v["layers"], "num_attention_heads": H, "num_key_value_heads": KV,
           "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "rope_scaling": None,
           "bos_token_id": models.VOCAB - 1, "eos_token_id": models.VOCAB - 1}
    rng = np.random.default_rng(31)
    mat = lambda rows, cols: (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)  # noqa: E731
    w = {"model.embed_tokens.weight": (0.3 * rng.standard_normal((models.VOCAB, C))).astype(np.float32)}
    for i in range(v["layers"]):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = np.ones(C, np.float32)
        for t, rows in (("q", H * D), ("k", KV * D), ("v", KV * D)):
            w[p + f"self_attn.{t}_proj.weight"] = mat(rows, C)
            if v["arch"] == "qwen2":
                w[p + f"self_attn.{t}_proj.bias"] = (0.1 * rng.standard_normal(rows)).astype(np.float32)
        w[p + "self_attn.o_proj.weight"] = mat(C, H * D)
        w[p + "post_attention_layernorm.weight"] = np.ones(C, np.float32)
        w[p + "mlp.gate_proj.weight"] = mat(F, C)
        w[p + "mlp.up_proj.weight"] = mat(F, C)
        w[p + "mlp.down_proj.weight"] = mat(C, F)
    w["model.norm.weight"] = np.ones(C, np.float32)
    if not v["tied"]:
        w["lm_head.weight"] = mat(models.VOCAB, C)
    gguf_file.write(path, name, cfg, w, "F32")


def gpt2_file(a, path):
    """kiln's own gpt2 export at F32 of a model trained one step (byte-level, width 256)."""
    text = os.path.join(a.work, "text.txt")
    with open(text, "w") as f:
        f.write("".join(f"line {i}: when shall we three meet again\n" for i in range(200)))
    run = os.path.join(a.work, "gpt2")
    shutil.rmtree(run, ignore_errors=True)  # a previous run's: kiln train refuses an --out that holds one
    return (pc.kiln_ok(a, "gpt2: train one step", "train", "--data", text, "--out", run, "--layers", "4", "--heads",
                       "4", "--dim", "256", "--block", "32", "--batch", "2", "--steps", "1", "--eval-every", "0",
                       "--eval-windows", "1", "--backend", "cpu") is not None and
            pc.kiln_ok(a, "gpt2: export --type f32", "export", "--ckpt", os.path.join(run, "model.safetensors"),
                       "--format", "gguf", "--type", "f32", "--out", path) is not None)


def compare(name, kind, got, want):
    """Every tensor of llama.cpp's file (want) in kiln's (got) with its type and bytes."""
    missing = sorted(set(want) ^ set(got))
    named = lambda n, t: t if n == "general.file_type" else TYPE_NAMES.get(t, t)  # noqa: E731
    types = [f"{n} {named(n, got[n][0])} (llama.cpp {named(n, want[n][0])})"
             for n in want if n in got and got[n][0] != want[n][0]]
    data = [n for n in want if n in got and got[n][0] == want[n][0] and got[n][2] != want[n][2]]
    mixed = sorted({TYPE_NAMES.get(t[0], t[0]) for n, t in want.items() if t[1] is not None})
    same = (f"general.file_type {want['general.file_type'][0]} and all {len(want) - 1} tensors of llama.cpp's "
            f"types ({', '.join(mixed)}) and bytes")
    pc.check(f"{name} {kind}", not missing and not types and not data, same if not missing and not types and not data
             else f"tensors only in one file {missing[:3]}, types {types[:3]}, bytes {data[:3]}")


def run_model(a, found, name, src, kinds):
    for kind in kinds:
        want_path, got_path = (os.path.join(a.work, f"{name}-{kind}.{who}.gguf") for who in ("llama", "kiln"))
        try:
            llama_quantize.quantize(found, src, want_path, *KINDS[kind])
        except (RuntimeError, FileNotFoundError) as e:
            pc.check(f"{name} {kind}: llama_model_quantize", False, str(e))
            continue
        if pc.kiln_ok(a, f"{name} {kind}: kiln quantize", "quantize", "--ckpt", src, "--format", kind,
                      "--out", got_path) is not None:
            compare(name, kind, read_tensors(got_path), read_tensors(want_path))


def main():
    a = pc.args(need_models=False)
    found = peers.find()
    if "libggml_base" not in found:
        pc.skip(found.get("why", "no llama.cpp build"))
    for name, v in LLAMA_MODELS.items():
        src = os.path.join(a.work, f"{name}-F32.gguf")
        llama_family_file(src, name, v)
        run_model(a, found, name, src, KINDS)
    src = os.path.join(a.work, "gpt2-F32.gguf")
    if gpt2_file(a, src):
        run_model(a, found, "gpt2_256", src, MIXES)
    pc.finish()


if __name__ == "__main__":
    main()
