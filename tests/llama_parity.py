#!/usr/bin/python3
"""The Llama family's block options against a float64 PyTorch replay of Hugging Face's
modeling code (LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM), written here from
their semantics, not from kiln.

  llama_parity.py --kiln PATH/kiln --workdir DIR [--backend cpu|vulkan|opencl]

Each configuration holds HF-style weights (q_proj, k_proj, v_proj [out, in], gate_proj,
up_proj, down_proj, RMSNorm weights, Qwen2's q/k/v biases, Qwen3's q_norm/k_norm), written
in kiln's layout (c_attn = [q^T | k^T | v^T], c_fc = [gate^T | up^T]) with kiln's metadata.
`kiln dev parity` must give the reference's logits, loss and every weight's gradient (mapped
back to HF's layout), and the losses of 30 AdamW steps. The reference is
tests/llama/reference.py's float64 forward from HF's semantics (RMSNorm, rotate_half rotary
embeddings with Llama 3's rope scaling, repeat_kv, down(silu(gate) * up), Qwen2's biases,
Qwen3's per-head RMSNorm of q and k before the rotation), with its weights as parameters and
kiln's toolkit options around its blocks. Exit 0: pass, 1: fail, 77: skipped.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "llama"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "samples"))
# parity_checks first: it exits 77 (skipped) where torch or numpy is missing
from parity_checks import Grad, kiln_adamw, replay_gpt, run_configs  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from nanogpt_torch import save_safetensors  # noqa: E402
from hf_rope import default_inv_freq, llama3_inv_freq  # noqa: E402
import reference  # noqa: E402

L, C, T_POS, V, EPS = 2, 32, 24, 64, 1e-5
BATCH, T, STEPS, LR = 2, 11, 30, 3e-3


HF_NAMES = {"input_layernorm": "input_layernorm.weight", "post_attention_layernorm": "post_attention_layernorm.weight",
            "q_proj": "self_attn.q_proj.weight", "k_proj": "self_attn.k_proj.weight",
            "v_proj": "self_attn.v_proj.weight", "o_proj": "self_attn.o_proj.weight",
            "q_bias": "self_attn.q_proj.bias", "k_bias": "self_attn.k_proj.bias", "v_bias": "self_attn.v_proj.bias",
            "q_norm": "self_attn.q_norm.weight", "k_norm": "self_attn.k_norm.weight",
            "gate_proj": "mlp.gate_proj.weight", "up_proj": "mlp.up_proj.weight", "down_proj": "mlp.down_proj.weight",
            "embed_tokens": "model.embed_tokens.weight", "norm": "model.norm.weight", "lm_head": "lm_head.weight"}


def hf_name(key):
    """Hugging Face's name of a weight of Reference.p ("0.q_proj", "norm"), or None for
    kiln's own (wpe, rezero)."""
    layer, _, rest = key.partition(".")
    if not rest:
        return HF_NAMES.get(key)
    return f"model.layers.{layer}.{HF_NAMES[rest]}" if rest in HF_NAMES else None


class Reference(reference.Reference):
    """A decoder-only model as Hugging Face's Llama, Qwen2 and Qwen3 classes compute it
    (reference.Reference's methods), in float64, its weights parameters drawn here, with
    kiln's toolkit options where a configuration asks for them."""

    def __init__(self, o, seed):
        self.o = o
        self.H, self.KVH = o["heads"], o.get("kv_heads", o["heads"])
        self.hd = o.get("head_dim", C // self.H)
        self.KV, self.D, self.eps = self.KVH, self.hd, EPS  # reference.Reference's names
        self.F = o.get("ffn", 48)
        self.V = Vw = o.get("vocab", V)  # 256 where kiln trains on it (bytes)
        g = torch.Generator().manual_seed(seed)
        # drawn in float32 (what the file holds), computed in float64
        r = lambda *shape, std=0.3, mean=0.0: torch.nn.Parameter(
            (mean + torch.randn(*shape, generator=g) * std).double())
        H, KVH, hd, Fw = self.H, self.KVH, self.hd, self.F
        P = self.p = {}
        P["embed_tokens"] = r(Vw, C)
        if o.get("position") == "learned":
            P["wpe"] = r(T_POS, C)
        for l in range(L):
            h = f"{l}."
            P[h + "input_layernorm"], P[h + "post_attention_layernorm"] = r(C, std=0.1, mean=1), r(C, std=0.1, mean=1)
            P[h + "q_proj"], P[h + "k_proj"], P[h + "v_proj"] = r(H * hd, C), r(KVH * hd, C), r(KVH * hd, C)
            P[h + "o_proj"] = r(C, H * hd)
            if o.get("bias") == "qkv":
                P[h + "q_bias"], P[h + "k_bias"], P[h + "v_bias"] = r(H * hd, std=0.1), r(KVH * hd, std=0.1), r(KVH * hd, std=0.1)
            if o.get("qk_norm"):
                P[h + "q_norm"], P[h + "k_norm"] = r(hd, std=0.1, mean=1), r(hd, std=0.1, mean=1)
            P[h + "gate_proj"], P[h + "up_proj"], P[h + "down_proj"] = r(Fw, C), r(Fw, C), r(C, Fw)
            if o.get("residual") == "rezero":
                P[h + "rezero"] = torch.nn.Parameter(torch.tensor([0.7], dtype=torch.float64))
        if o.get("norm", "pre") == "pre":
            P["norm"] = r(C, std=0.1, mean=1)
        if o.get("untied"):
            P["lm_head"] = r(Vw, C)
        self.inv_freq = default_inv_freq(o.get("rope_base", 10000.0), hd)
        self.freq_factors = None
        if o.get("rope_scaling"):
            s = o["rope_scaling"]
            scaled = llama3_inv_freq(self.inv_freq, s["factor"], s["low_freq_factor"], s["high_freq_factor"],
                                     s["original_max"])
            self.freq_factors = (self.inv_freq / scaled).float()  # what kiln's rope.freqs holds
            self.inv_freq = self.inv_freq / self.freq_factors.double()

    @property
    def w(self):
        """reference.Reference's view of the parameters: {HF name: parameter}."""
        return {hf_name(k): v for k, v in self.p.items() if hf_name(k)}

    def sublayer(self, w, l, norm, x, f):
        """kiln's norm placement (pre, post, none) and ReZero around HF's block f."""
        where, weight = self.o.get("norm", "pre"), w[f"model.layers.{l}.{norm}.weight"]
        y = f(self.rmsnorm(x, weight) if where == "pre" else x)
        if self.o.get("residual") == "rezero":
            y = self.p[f"{l}.rezero"] * y
        out = x + y
        return self.rmsnorm(out, weight) if where == "post" else out

    def __call__(self, ids, targets):
        w = self.w
        x = self.p["embed_tokens"][ids]
        if "wpe" in self.p:
            x = x + self.p["wpe"][: ids.shape[1]]
        # learned positions: no rotation (cos 1, sin 0 leave q and k as they are)
        cos, sin = self.rotary(ids.shape[1]) if self.o.get("position", "rope") == "rope" else (1.0, 0.0)
        for l in range(L):
            p = f"model.layers.{l}."
            x = self.sublayer(w, l, "input_layernorm", x, lambda t: self.attention(t, p, cos, sin))
            x = self.sublayer(w, l, "post_attention_layernorm", x, lambda t: self.mlp(t, p))
        if "norm" in self.p:
            x = self.rmsnorm(x, self.p["norm"])
        logits = x @ self.p.get("lm_head", self.p["embed_tokens"]).t()
        return logits, F.cross_entropy(logits.reshape(-1, self.V), targets.reshape(-1))

    def kiln_tensors(self, of):
        """kiln's checkpoint tensors (the contract's names and Conv1D layout) of the reference's
        weights (of = lambda p: p) or gradients (of = lambda p: p.grad)."""
        P, o, t = self.p, self.o, {}
        t["wte.weight"] = of(P["embed_tokens"])
        if "wpe" in P:
            t["wpe.weight"] = of(P["wpe"])
        for l in range(L):
            h, k = f"{l}.", f"h.{l}."
            t[k + "ln_1.weight"], t[k + "ln_2.weight"] = of(P[h + "input_layernorm"]), of(P[h + "post_attention_layernorm"])
            t[k + "attn.c_attn.weight"] = torch.cat([of(P[h + n]).t() for n in ("q_proj", "k_proj", "v_proj")], dim=1)
            if o.get("bias") == "qkv":
                t[k + "attn.c_attn.bias"] = torch.cat([of(P[h + n]) for n in ("q_bias", "k_bias", "v_bias")])
            t[k + "attn.c_proj.weight"] = of(P[h + "o_proj"]).t()
            if o.get("qk_norm"):
                t[k + "attn.q_norm.weight"], t[k + "attn.k_norm.weight"] = of(P[h + "q_norm"]), of(P[h + "k_norm"])
            t[k + "mlp.c_fc.weight"] = torch.cat([of(P[h + "gate_proj"]).t(), of(P[h + "up_proj"]).t()], dim=1)
            t[k + "mlp.c_proj.weight"] = of(P[h + "down_proj"]).t()
            if o.get("residual") == "rezero":
                t[k + "rezero.alpha"] = of(P[h + "rezero"])
        if "norm" in P:
            t["ln_f.weight"] = of(P["norm"])
        if "lm_head" in P:
            t["lm_head.weight"] = of(P["lm_head"])
        return {n: v.detach().contiguous() for n, v in t.items()}

    def save(self, path):
        o = self.o
        meta = {"format": "pt", "n_layer": str(L), "n_head": str(self.H), "n_embd": str(C),
                "n_positions": str(T_POS), "vocab_size": str(self.V), "layer_norm_epsilon": str(EPS),
                "kiln.norm": o.get("norm", "pre"), "kiln.residual": o.get("residual", "plain"),
                "kiln.norm_type": "rmsnorm", "kiln.mlp": "swiglu", "kiln.bias": o.get("bias", "none"),
                "n_kv_head": str(self.KVH), "head_dim": str(self.hd), "n_ffn": str(self.F)}
        if o.get("position", "rope") == "rope":
            meta.update({"position": "rope", "kiln.rope": "1", "kiln.rope_base": repr(o.get("rope_base", 10000.0)),
                         "kiln.rope_layout": "half"})
        if o.get("qk_norm"):
            meta["kiln.qk_norm"] = "1"
        if o.get("untied"):
            meta["untied"] = "1"
        tensors = {n: v.float().numpy() for n, v in self.kiln_tensors(lambda p: p).items()}
        if self.freq_factors is not None:
            meta["rope_freqs"] = "1"
            tensors["rope.freqs"] = self.freq_factors.numpy()
        save_safetensors(path, tensors, meta)

    def optimizer(self):
        """AdamW with kiln's decay roles: matrices and embeddings decay, norms and scales do not."""
        return kiln_adamw(self.p, LR, (0.9, 0.95), lambda n, p: p.dim() == 2)


# theta 10000 at hd 8: wavelengths 6.3, 63, 628, 6283 against bands at 64/4 and 64/1: each band occurs
LLAMA3_SCALING = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max": 64}

CONFIGS = [
    # Llama: GQA 4/2, untied, no biases
    ("llama_gqa_untied", {"heads": 4, "kv_heads": 2, "untied": 1}),
    # Qwen2: q/k/v biases, tied, theta 1e6, GQA 4/1
    ("qwen2_qkv_bias", {"heads": 4, "kv_heads": 1, "bias": "qkv", "rope_base": 1e6}),
    # Qwen3: q/k norm, a head width that is not dim / heads
    ("qwen3_qk_norm_head_dim", {"heads": 4, "kv_heads": 2, "qk_norm": 1, "head_dim": 12, "untied": 1}),
    # Llama 3.x's rope scaling through rope.freqs
    ("llama3_rope_scaling", {"heads": 4, "kv_heads": 2, "rope_scaling": LLAMA3_SCALING}),
    # the stability toolkit with RMSNorm: Post-LN with ReZero, learned positions
    ("post_rmsnorm_rezero_learned", {"heads": 4, "kv_heads": 2, "norm": "post", "residual": "rezero",
                                     "position": "learned"}),
]


def run_config(args, name, o, seed):
    model = Reference(o, seed)
    replay_gpt(args, name, model, seed, V, BATCH, T, STEPS, LR,
               lambda: {n: Grad(g) for n, g in model.kiln_tensors(lambda p: p.grad).items()})


if __name__ == "__main__":
    run_configs(CONFIGS, run_config, 30, "the Llama family's block matches PyTorch (HF's semantics, float64)")
