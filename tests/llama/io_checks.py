#!/usr/bin/python3
"""kiln reads other tools' files of the Llama family and gives the logits of a float64
PyTorch forward from Hugging Face's modeling semantics (tests/llama_parity.py's Reference).

  io_checks.py --kiln PATH/kiln --workdir DIR [--backend cpu|vulkan|opencl]

For random models of each architecture (llama: GQA 4/2, tied, Llama 3 rope scaling; qwen2:
q/k/v biases, GQA 4/1, untied, theta 1e6; qwen3: q/k norm, a head width that is not
dim / heads, untied):
- Hugging Face folders (config.json + model.safetensors) at F32, F16 and BF16, and a
  sharded one (model.safetensors.index.json), given as the folder or its config.json;
- GGUF files with llama.cpp's keys and names (llama's q/k rows permuted as
  convert_hf_to_gguf.py does) at F32, F16, BF16 and Q8_0.
`kiln dev parity --steps 0` dumps the logits; the reference computes with the values the
file holds (rounded to its type), so F32/F16/BF16 must agree to 1e-5 relative; Q8_0 to 6e-2
(kiln's quantized product rounds activations to int8 blocks as ggml's CPU does, about 3e-2
here; a wrong row order or block is off by O(1)).
Then bad input: an unknown class, a missing and a misshapen tensor, an architecture kiln
does not read: a non-zero exit and one line naming what and where.
Exit 0: pass, 1: fail, 77: skipped."""
import copy
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "..", "samples"))
from parity_checks import check, finish, kiln_dev, parity_args, rel_err  # noqa: E402  (77 without torch)
import numpy as np  # noqa: E402
import torch  # noqa: E402
from nanogpt_torch import load_safetensors, save_safetensors  # noqa: E402
import llama_parity as lp  # noqa: E402
import gguf_file  # noqa: E402
from gguf_file import GGML_BF16, GGML_F16, GGML_F32, GGML_Q8_0, permute, tensor_bytes  # noqa: E402
from hf_folder import write_rounded as hf_write  # noqa: E402

MODELS = [
    ("llama", "LlamaForCausalLM", {"heads": 4, "kv_heads": 2, "rope_scaling": lp.LLAMA3_SCALING}),
    ("qwen2", "Qwen2ForCausalLM", {"heads": 4, "kv_heads": 1, "bias": "qkv", "rope_base": 1e6, "untied": 1}),
    ("qwen3", "Qwen3ForCausalLM", {"heads": 4, "kv_heads": 2, "qk_norm": 1, "head_dim": 12, "untied": 1}),
]


def hf_names(ref):
    """Reference weight -> Hugging Face name."""
    return {k: lp.hf_name(k) for k in ref.p}


def gguf_names(ref):
    """Reference weight -> convert_hf_to_gguf.py's name."""
    return {k: gguf_file.gguf_name(hf) for k, hf in hf_names(ref).items()}


def hf_config(cls, ref, o):
    c = {"architectures": [cls], "hidden_size": lp.C, "num_hidden_layers": lp.L, "num_attention_heads": ref.H,
         "num_key_value_heads": ref.KVH, "head_dim": ref.hd, "intermediate_size": ref.F, "vocab_size": lp.V,
         "max_position_embeddings": lp.T_POS, "rms_norm_eps": lp.EPS, "rope_theta": o.get("rope_base", 10000.0),
         "tie_word_embeddings": not o.get("untied"), "hidden_act": "silu", "torch_dtype": "bfloat16"}
    if o.get("rope_scaling"):
        s = o["rope_scaling"]
        c["rope_scaling"] = {"rope_type": "llama3", "factor": s["factor"], "low_freq_factor": s["low_freq_factor"],
                             "high_freq_factor": s["high_freq_factor"],
                             "original_max_position_embeddings": s["original_max"]}
    return c


def parity(args, name, path, tokens_path, ref, tol):
    out = os.path.join(args.workdir, name + "_kiln.safetensors")
    if not kiln_dev(args, name, "parity", "--ckpt", path, "--tokens", tokens_path, "--out", out, "--steps", "0"):
        return
    got, _ = load_safetensors(out)
    tokens, _ = load_safetensors(tokens_path)
    t = torch.from_numpy(tokens["tokens"].astype(np.int64))
    with torch.no_grad():
        logits, _ = ref(t[0, :, :-1], t[0, :, 1:])
    e = rel_err(got["logits"], logits.numpy())
    check(f"{name}: logits", e < tol, f"relative error {e:.2e} (tolerance {tol:g})")


def held_reference(ref, held):
    """The reference computing with the values a file holds."""
    r = copy.copy(ref)
    r.p = {k: torch.nn.Parameter(held.get(k, v.detach())) for k, v in ref.p.items()}
    return r


def hf_cases(args, arch, cls, o, ref, tokens_path):
    names = hf_names(ref)
    tensors = {names[k]: v.detach().float() for k, v in ref.p.items()}
    for dtype, label, shards in ((torch.float32, "f32", 1), (torch.float16, "f16", 1), (torch.bfloat16, "bf16", 1),
                                 (torch.bfloat16, "bf16_sharded", 3)):
        folder = os.path.join(args.workdir, f"hf_{arch}_{label}")
        hf_write(folder, hf_config(cls, ref, o), tensors, dtype, shards)
        held = {k: v.detach().float().to(dtype).double() for k, v in ref.p.items()}  # what the file holds
        target = os.path.join(folder, "config.json") if shards > 1 else folder
        parity(args, f"hf {arch} {label}", target, tokens_path, held_reference(ref, held), 1e-5)


def gguf_kvs(arch, ref, o):
    k = lambda s: f"{arch}.{s}"  # noqa: E731
    return [("general.architecture", arch), (k("block_count"), lp.L), (k("context_length"), lp.T_POS),
            (k("embedding_length"), lp.C), (k("feed_forward_length"), ref.F), (k("attention.head_count"), ref.H),
            (k("attention.head_count_kv"), ref.KVH), (k("attention.key_length"), ref.hd),
            (k("attention.value_length"), ref.hd), (k("rope.freq_base"), float(o.get("rope_base", 10000.0))),
            (k("attention.layer_norm_rms_epsilon"), float(lp.EPS))]


def write_gguf(path, arch, o, ref, mtype):
    """The reference's weights as convert_hf_to_gguf.py lays them out; returns the values held."""
    names, tensors, held = gguf_names(ref), [], {}
    for key, v in ref.p.items():
        w = v.detach().float()
        # 1-D tensors stay f32; a matrix whose rows are not whole Q8_0 blocks falls back to f16
        typ = GGML_F32 if w.dim() == 1 else mtype if mtype != GGML_Q8_0 or w.shape[1] % 32 == 0 else GGML_F16
        raw, held[key] = tensor_bytes(w, typ)
        rest = key.partition(".")[2]
        if arch == "llama" and rest in ("q_proj", "k_proj"):
            raw, _ = tensor_bytes(permute(w, ref.H if rest == "q_proj" else ref.KVH), typ)
        tensors.append((names[key], typ, list(w.shape), raw))
    if ref.freq_factors is not None:
        raw, _ = tensor_bytes(ref.freq_factors.float(), GGML_F32)
        tensors.append(("rope_freqs.weight", GGML_F32, [ref.freq_factors.shape[0]], raw))
    gguf_file.write_file(path, gguf_file.kvs(gguf_kvs(arch, ref, o)), tensors)
    return held


def gguf_cases(args, arch, o, ref, tokens_path):
    for mtype, label, tol in ((GGML_F32, "f32", 1e-5), (GGML_F16, "f16", 1e-5), (GGML_BF16, "bf16", 1e-5),
                              (GGML_Q8_0, "q8_0", 6e-2)):
        path = os.path.join(args.workdir, f"{arch}_{label}.gguf")
        held = write_gguf(path, arch, o, ref, mtype)
        parity(args, f"gguf {arch} {label}", path, tokens_path, held_reference(ref, held), tol)


def refused(args, what, path, tokens_path, says):
    out = os.path.join(args.workdir, "refused.safetensors")
    r = subprocess.run([args.kiln, "dev", "parity", "--ckpt", path, "--tokens", tokens_path, "--out", out,
                        "--steps", "0", "--backend", args.backend], capture_output=True, text=True)
    lines = r.stderr.strip().splitlines()
    errors = [ln for ln in lines if ln.startswith("kiln: error:")]
    ok = r.returncode not in (0, 77) and len(errors) == 1 and all(s in errors[0] for s in says)
    check(f"refused: {what}", ok, errors[0] if errors else f"exit {r.returncode}: {r.stderr.strip()}")


def bad_inputs(args, tokens_path):
    o = MODELS[0][2]
    ref = lp.Reference(o, 5)
    names = hf_names(ref)
    tensors = {names[k]: v.detach().float() for k, v in ref.p.items()}
    folder = os.path.join(args.workdir, "bad_class")
    hf_write(folder, dict(hf_config("MistralForCausalLM", ref, o)), tensors, torch.float32)
    refused(args, "an unknown class", folder, tokens_path, ["MistralForCausalLM", "config.json"])
    folder = os.path.join(args.workdir, "bad_missing")
    hf_write(folder, hf_config("LlamaForCausalLM", ref, o),
             {n: t for n, t in tensors.items() if n != "model.layers.1.mlp.up_proj.weight"}, torch.float32)
    refused(args, "a missing tensor", folder, tokens_path, ["model.layers.1.mlp.up_proj.weight", "bad_missing"])
    folder = os.path.join(args.workdir, "bad_shape")
    bad = dict(tensors)
    bad["model.layers.0.self_attn.k_proj.weight"] = torch.zeros(ref.KVH * ref.hd + 2, lp.C)
    hf_write(folder, hf_config("LlamaForCausalLM", ref, o), bad, torch.float32)
    refused(args, "a misshapen tensor", folder, tokens_path, ["model.layers.0.self_attn.k_proj.weight", "bad_shape"])
    path = os.path.join(args.workdir, "bad_arch.gguf")
    gguf_file.write_file(path, gguf_file.kvs([("general.architecture", "mamba")]), [])
    refused(args, "an architecture kiln does not read", path, tokens_path, ["mamba", "bad_arch.gguf"])


def main():
    args = parity_args()
    g = torch.Generator().manual_seed(7)
    tokens_path = os.path.join(args.workdir, "tokens.safetensors")
    tokens = torch.randint(0, lp.V, (1, lp.BATCH, lp.T + 1), generator=g)
    save_safetensors(tokens_path, {"tokens": tokens.numpy().astype(np.int64)})
    for i, (arch, cls, o) in enumerate(MODELS):
        ref = lp.Reference(o, 40 + i)
        hf_cases(args, arch, cls, o, ref, tokens_path)
        gguf_cases(args, arch, o, ref, tokens_path)
    bad_inputs(args, tokens_path)
    finish("kiln reads the Llama family's HF folders and GGUF files to PyTorch's logits (HF's semantics, float64)")


if __name__ == "__main__":
    main()
