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
import ctypes
import glob
import os
import struct

import numpy as np

import gguf_file
import models
import peer_checks as pc
import peers

# llama_ftype (llama.h) of each kiln type, and whether llama-quantize runs it --pure
FTYPES = {"q4_k_m": (15, False), "q5_k_m": (17, False), "q4_k_s": (14, False), "q5_k_s": (16, False),
          "q4_k": (14, True), "q5_k": (16, True), "q6_k": (18, True), "q5_0": (8, True), "q5_1": (9, True),
          "q8_0": (7, True), "q4_0": (2, True), "q4_1": (3, True)}
MIXES = ("q4_k_m", "q5_k_m", "q4_k_s", "q5_k_s")
# ggml's blocks: type -> (values, bytes)
BLOCKS = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34), 12: (256, 144),
          13: (256, 176), 14: (256, 210)}
TYPE_NAMES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 12: "Q4_K", 13: "Q5_K",
              14: "Q6_K"}

LLAMA_MODELS = {
    "llama_256": dict(arch="llama", dim=256, heads=4, kv=2, ffn=512, layers=8, tied=True),
    "qwen2_192": dict(arch="qwen2", dim=192, heads=4, kv=2, ffn=576, layers=4, tied=False),
}


class QuantizeParams(ctypes.Structure):
    """llama_model_quantize_params of llama.h at 80fb11a, field by field."""
    _fields_ = [("nthread", ctypes.c_int32), ("ftype", ctypes.c_int), ("output_tensor_type", ctypes.c_int),
                ("token_embedding_type", ctypes.c_int), ("allow_requantize", ctypes.c_bool),
                ("quantize_output_tensor", ctypes.c_bool), ("only_copy", ctypes.c_bool), ("pure", ctypes.c_bool),
                ("keep_split", ctypes.c_bool), ("dry_run", ctypes.c_bool), ("imatrix", ctypes.c_void_p),
                ("kv_overrides", ctypes.c_void_p), ("tt_overrides", ctypes.c_void_p),
                ("prune_layers", ctypes.c_void_p), ("max_buf_size", ctypes.c_size_t)]


_QUIET = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)(lambda level, text, data: None)


def libllama(found):
    libs = [p for p in glob.glob(os.path.join(found["root"], peers.LLAMA_BINS, "libllama*.so"))
            if "common" not in os.path.basename(p)]
    if not libs:
        pc.skip(f"no libllama in {os.path.join(found['root'], peers.LLAMA_BINS)}")
    lib = ctypes.CDLL(libs[0])
    lib.llama_model_quantize_default_params.restype = QuantizeParams
    lib.llama_model_quantize.restype = ctypes.c_uint32
    lib.llama_model_quantize.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(QuantizeParams)]
    lib.llama_backend_init()
    lib.llama_log_set(_QUIET, None)  # its per-tensor lines would bury the checks'
    return lib


def llama_quantize(lib, src, out, kind):
    params = lib.llama_model_quantize_default_params()
    params.ftype, params.pure = FTYPES[kind]
    params.nthread = 1
    return lib.llama_model_quantize(src.encode(), out.encode(), ctypes.byref(params)) == 0


def read_tensors(path):
    """{name: (ggml type, ne, bytes)} of a GGUF file (ggml's docs/gguf.md), and its
    general.file_type under the name "general.file_type" as (that number, None, b"")."""
    with open(path, "rb") as f:
        data = f.read()
    at = 4
    _, n_tensors, n_kv = struct.unpack_from("<IQQ", data, at)
    at += 20

    def string(at):
        n = struct.unpack_from("<Q", data, at)[0]
        return data[at + 8:at + 8 + n].decode(), at + 8 + n

    def skip_value(t, at):
        fixed = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
        if t == 8:
            return string(at)[1]
        if t == 9:
            et, n = struct.unpack_from("<IQ", data, at)
            at += 12
            for _ in range(n):
                at = skip_value(et, at)
            return at
        return at + fixed[t]

    align, out = 32, {}
    for _ in range(n_kv):
        key, at = string(at)
        t = struct.unpack_from("<I", data, at)[0]
        if key == "general.alignment":
            align = struct.unpack_from("<I", data, at + 4)[0]
        if key == "general.file_type":
            out[key] = (struct.unpack_from("<I", data, at + 4)[0], None, b"")
        at = skip_value(t, at + 4)
    infos = []
    for _ in range(n_tensors):
        name, at = string(at)
        nd = struct.unpack_from("<I", data, at)[0]
        ne = list(struct.unpack_from(f"<{nd}Q", data, at + 4))
        typ, off = struct.unpack_from("<IQ", data, at + 4 + 8 * nd)
        at += 4 + 8 * nd + 12
        infos.append((name, typ, ne, off))
    base = (at + align - 1) // align * align
    for name, typ, ne, off in infos:
        values, nbytes = BLOCKS.get(typ, (1, 0))
        n = int(np.prod(ne))
        out[name] = (typ, ne, data[base + off:base + off + n // values * nbytes])
    return out


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


def run_model(a, lib, name, src, kinds):
    for kind in kinds:
        want_path, got_path = (os.path.join(a.work, f"{name}-{kind}.{who}.gguf") for who in ("llama", "kiln"))
        if not llama_quantize(lib, src, want_path, kind):
            pc.check(f"{name} {kind}: llama_model_quantize", False, "failed (its log is above)")
            continue
        if pc.kiln_ok(a, f"{name} {kind}: kiln quantize", "quantize", "--ckpt", src, "--format", kind,
                      "--out", got_path) is not None:
            compare(name, kind, read_tensors(got_path), read_tensors(want_path))


def main():
    a = pc.args(need_models=False)
    found = peers.find()
    if "libggml_base" not in found:
        pc.skip(found.get("why", "no llama.cpp build"))
    lib = libllama(found)
    for name, v in LLAMA_MODELS.items():
        src = os.path.join(a.work, f"{name}-F32.gguf")
        llama_family_file(src, name, v)
        run_model(a, lib, name, src, FTYPES)
    src = os.path.join(a.work, "gpt2-F32.gguf")
    if gpt2_file(a, src):
        run_model(a, lib, "gpt2_256", src, MIXES)
    pc.finish()


if __name__ == "__main__":
    main()
