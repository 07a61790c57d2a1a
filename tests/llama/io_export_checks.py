#!/usr/bin/python3
"""`kiln export` writes what llama.cpp's convert_hf_to_gguf.py and Hugging Face's
save_pretrained write, checked against the formats' specifications here, not against kiln.

  io_export_checks.py --kiln PATH/kiln --workdir DIR

For random models of llama (GQA 4/2, Llama 3 rope scaling), qwen2 (q/k/v biases, untied) and
qwen3 (q/k norm, head width 12, untied), read from a Hugging Face folder:
- `--format gguf --type f32`: general.architecture and the <arch>.* keys of
  convert_hf_to_gguf.py with the config's values, exactly its tensor names (output only when
  untied, rope_freqs with the scaling's factors), each tensor the folder's values (llama's
  attn_q and attn_k rows permuted as LlamaModel.permute does), 1-D tensors f32;
- `--type q8_0`: the matrices whose rows are whole blocks in Q8_0, the bytes ggml's
  quantize_row_q8_0_ref writes (float32 arithmetic, roundf), the others f16;
- `--format hf --type bf16` from that GGUF file: config.json's class, sizes, epsilon and theta
  as Python writes them, model.safetensors' HF names with the original values rounded to
  bf16, tokenizer.json's vocabulary; rope scaling, whose parameters a GGUF file does not hold
  (rope_freqs only), as config.json's rope_scaling fitted to the factors;
- GPT-2: a kiln checkpoint as GPT2LMHeadModel ("transformer." names, Conv1D layout, no
  lm_head) with GPT2Config's keys.
Exit 0: pass, 1: fail, 77: skipped (no torch)."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "..", "samples"))
from parity_checks import check, finish, kiln_ok, parity_args, rel_err  # noqa: E402  (77 without torch)
import torch  # noqa: E402
from nanogpt_torch import GPT  # noqa: E402
import llama_parity as lp  # noqa: E402
from io_checks import MODELS, gguf_names, hf_config, hf_names  # noqa: E402
from gguf_file import GGML_F16, GGML_F32, GGML_Q8_0, permute, tensor_bytes  # noqa: E402
from gguf_file import read as gguf_read, values as gguf_values  # noqa: E402
from hf_folder import read_f64 as st_read, write_rounded as hf_write  # noqa: E402

lp.V = 256  # the models speak bytes: kiln's byte tokenizer goes along


def file_values(arch, ref, key):
    """What convert_hf_to_gguf.py stores for reference weight key (f32)."""
    w = ref.p[key].detach().float()
    rest = key.partition(".")[2]
    if arch == "llama" and rest in ("q_proj", "k_proj"):
        w = permute(w, ref.H if rest == "q_proj" else ref.KVH)
    return w.double()


def check_keys(name, kvs, arch, ref, o):
    want = {"general.architecture": arch, f"{arch}.block_count": lp.L, f"{arch}.context_length": lp.T_POS,
            f"{arch}.embedding_length": lp.C, f"{arch}.feed_forward_length": ref.F,
            f"{arch}.attention.head_count": ref.H, f"{arch}.attention.head_count_kv": ref.KVH,
            f"{arch}.attention.key_length": ref.hd, f"{arch}.attention.value_length": ref.hd}
    bad = [k for k, v in want.items() if kvs.get(k) != v]
    close = {f"{arch}.rope.freq_base": o.get("rope_base", 10000.0), f"{arch}.attention.layer_norm_rms_epsilon": lp.EPS}
    bad += [k for k, v in close.items() if k not in kvs or abs(kvs[k] - v) > 1e-6 * v]
    if arch == "llama" and (kvs.get("llama.vocab_size") != lp.V or kvs.get("llama.rope.dimension_count") != ref.hd):
        bad.append("llama.vocab_size / llama.rope.dimension_count")
    check(f"{name}: keys", not bad, "as convert_hf_to_gguf.py writes them" if not bad else f"wrong: {bad}")


def gguf_export(args, arch, o, ref, folder):
    names = gguf_names(ref)
    for label, tol in (("f32", 0.0), ("q8_0", 1e-3)):
        path = os.path.join(args.workdir, f"{arch}_export_{label}.gguf")
        if kiln_ok(args, f"gguf {arch} {label}: kiln export", "export", "--ckpt", folder, "--format", "gguf",
                   "--type", label, "--out", path) is None:
            continue
        kvs, tensors = gguf_read(path)
        if label == "f32":
            check_keys(f"gguf {arch}", kvs, arch, ref, o)
        want = {names[k] for k in ref.p} | ({"rope_freqs.weight"} if ref.freq_factors is not None else set())
        check(f"gguf {arch} {label}: tensor names", set(tensors) == want,
              "convert_hf_to_gguf.py's" if set(tensors) == want else f"{sorted(set(tensors) ^ want)} differ")
        worst, types_ok = 0.0, True
        for key in ref.p:
            if names[key] not in tensors:
                continue
            typ, shape, raw = tensors[names[key]]
            expect = file_values(arch, ref, key)
            one_d = expect.dim() == 1
            want_type = GGML_F32 if one_d or label == "f32" else GGML_Q8_0 if expect.shape[1] % 32 == 0 else GGML_F16
            types_ok &= typ == want_type and shape == list(expect.shape)
            got = gguf_values(typ, shape, raw)
            if typ == GGML_Q8_0:  # ggml's reference quantizer's bytes, exactly
                e = 0.0 if raw == tensor_bytes(expect.float(), GGML_Q8_0)[0] else float("inf")
            else:
                e = rel_err(got.numpy(), expect.numpy()) if typ != GGML_F16 else \
                    rel_err(got.numpy(), expect.half().double().numpy())
            worst = max(worst, e)
        if ref.freq_factors is not None and "rope_freqs.weight" in tensors:
            got = gguf_values(*tensors["rope_freqs.weight"])
            worst = max(worst, rel_err(got.numpy(), ref.freq_factors.double().numpy()) / 1e-6)
        check(f"gguf {arch} {label}: types and shapes", types_ok, "1-D f32, matrices as asked (f16 where not whole blocks)")
        check(f"gguf {arch} {label}: values", worst <= tol, f"worst {worst:.3g} relative" +
              (" (Q8_0: the bytes of ggml's quantize_row_q8_0_ref)" if label == "q8_0" else ""))


def hf_export(args, arch, cls, o, ref):
    path = os.path.join(args.workdir, f"{arch}_export_f32.gguf")
    out = os.path.join(args.workdir, f"{arch}_export_hf")
    # (rope scaling: a GGUF file holds the factors only; config.json's parameters are fitted to them)
    if kiln_ok(args, f"hf {arch}: kiln export", "export", "--ckpt", path, "--format", "hf", "--type", "bf16",
               "--out", out) is None:
        return
    with open(os.path.join(out, "config.json")) as f:
        c = json.load(f)
    want = hf_config(cls, ref, o)
    keys = ("architectures", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
            "head_dim", "intermediate_size", "vocab_size", "max_position_embeddings", "tie_word_embeddings",
            "hidden_act")
    bad = [k for k in keys if c.get(k) != want[k]]
    bad += [k for k in ("rms_norm_eps", "rope_theta", "rope_scaling") if c.get(k) != want.get(k)]
    check(f"hf {arch}: config.json", not bad and c.get("model_type") == arch, f"wrong: {bad}" if bad else cls)
    got = st_read(os.path.join(out, "model.safetensors"))
    names = hf_names(ref)
    expect = {names[k]: v.detach().float().to(torch.bfloat16).double() for k, v in ref.p.items()}
    same = set(got) == set(expect) and all(torch.equal(got[n], expect[n]) for n in expect)
    check(f"hf {arch}: model.safetensors", same, "HF's names, [out, in], the values in bf16" if same else
          f"names {sorted(set(got) ^ set(expect))} or values differ")
    with open(os.path.join(out, "tokenizer.json")) as f:
        t = json.load(f)
    check(f"hf {arch}: tokenizer.json", t["model"]["type"] == "BPE" and len(t["model"]["vocab"]) == lp.V,
          f"{len(t['model']['vocab'])} tokens")


def gpt2_export(args):
    cfg = {"n_layer": 2, "n_head": 2, "n_embd": 32, "n_positions": 16, "vocab_size": 256, "layer_norm_epsilon": 1e-5}
    torch.manual_seed(3)
    model = GPT(cfg)
    model.init_weights()
    ckpt = os.path.join(args.workdir, "gpt2.safetensors")
    model.save(ckpt)
    out = os.path.join(args.workdir, "gpt2_hf")
    if kiln_ok(args, "hf gpt2: kiln export", "export", "--ckpt", ckpt, "--format", "hf", "--out", out) is None:
        return
    with open(os.path.join(out, "config.json")) as f:
        c = json.load(f)
    ok = c["architectures"] == ["GPT2LMHeadModel"] and all(c[k] == cfg[k] for k in cfg if k != "layer_norm_epsilon")
    check("hf gpt2: config.json", ok and abs(c["layer_norm_epsilon"] - 1e-5) < 1e-12, json.dumps(c)[:120])
    got = st_read(os.path.join(out, "model.safetensors"))
    expect = {"transformer." + k: v.detach().double() for k, v in model.state_dict().items()}
    same = set(got) == set(expect) and all(torch.equal(got[n], expect[n]) for n in expect)
    check("hf gpt2: model.safetensors", same, "GPT2LMHeadModel's names and Conv1D layout, tied head left out" if same
          else f"names {sorted(set(got) ^ set(expect))} or values differ")


def main():
    args = parity_args()
    for i, (arch, cls, o) in enumerate(MODELS):
        ref = lp.Reference(o, 60 + i)
        folder = os.path.join(args.workdir, f"{arch}_source")
        hf_write(folder, hf_config(cls, ref, o), {hf_names(ref)[k]: v.detach().float() for k, v in ref.p.items()},
                 torch.float32)
        gguf_export(args, arch, o, ref, folder)
        hf_export(args, arch, cls, o, ref)
    gpt2_export(args)
    finish("kiln export writes GGUF as convert_hf_to_gguf.py does and HF folders as save_pretrained does")


if __name__ == "__main__":
    main()
