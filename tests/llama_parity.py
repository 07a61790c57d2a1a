#!/usr/bin/python3
"""The Llama family's block options against a float64 PyTorch replay of Hugging Face's
modeling code (LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM), written here from
their semantics, not from kiln.

  llama_parity.py --kiln PATH/kiln --workdir DIR [--backend cpu|vulkan|opencl]

Each configuration holds HF-style weights (q_proj, k_proj, v_proj [out, in], gate_proj,
up_proj, down_proj, RMSNorm weights, Qwen2's q/k/v biases, Qwen3's q_norm/k_norm), written
in kiln's layout (c_attn = [q^T | k^T | v^T], c_fc = [gate^T | up^T]) with kiln's metadata.
`kiln dev parity` must give the reference's logits, loss and every weight's gradient (mapped
back to HF's layout), and the losses of 30 AdamW steps. The reference follows HF: RMSNorm
x * rsqrt(mean x^2 + eps) * w, rotate_half rotary embeddings (Llama 3's rope scaling by
_compute_llama3_parameters), repeat_kv for grouped-query attention, down(silu(gate) * up),
Qwen3's per-head RMSNorm of q and k before the rotation. Exit 0: pass, 1: fail, 77: skipped.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "samples"))
# parity_checks first: it exits 77 (skipped) where torch or numpy is missing
from parity_checks import Grad, kiln_adamw, replay_gpt, run_configs  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from nanogpt_torch import save_safetensors  # noqa: E402
from hf_rope import default_inv_freq, llama3_inv_freq, rotate_half  # noqa: E402

L, C, T_POS, V, EPS = 2, 32, 24, 64, 1e-5
BATCH, T, STEPS, LR = 2, 11, 30, 3e-3


class Reference:
    """A decoder-only model as Hugging Face's Llama, Qwen2 and Qwen3 classes compute it, in
    float64, with kiln's toolkit options where a configuration asks for them."""

    def __init__(self, o, seed):
        self.o = o
        self.H, self.KVH = o["heads"], o.get("kv_heads", o["heads"])
        self.hd = o.get("head_dim", C // self.H)
        self.F = o.get("ffn", 48)
        g = torch.Generator().manual_seed(seed)
        # drawn in float32 (what the file holds), computed in float64
        r = lambda *shape, std=0.3, mean=0.0: torch.nn.Parameter(
            (mean + torch.randn(*shape, generator=g) * std).double())
        H, KVH, hd, Fw = self.H, self.KVH, self.hd, self.F
        P = self.p = {}
        P["embed_tokens"] = r(V, C)
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
            P["lm_head"] = r(V, C)
        self.inv_freq = default_inv_freq(o.get("rope_base", 10000.0), hd)
        self.freq_factors = None
        if o.get("rope_scaling"):
            s = o["rope_scaling"]
            scaled = llama3_inv_freq(self.inv_freq, s["factor"], s["low_freq_factor"], s["high_freq_factor"],
                                     s["original_max"])
            self.freq_factors = (self.inv_freq / scaled).float()  # what kiln's rope.freqs holds
            self.inv_freq = self.inv_freq / self.freq_factors.double()

    def rms(self, x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w

    def rope(self, x):
        """x [B, heads, T, hd]: HF's apply_rotary_pos_emb with cos/sin of cat(freqs, freqs)."""
        t = torch.arange(x.shape[2], dtype=torch.float64)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return x * emb.cos() + rotate_half(x) * emb.sin()

    def attention(self, h, x):
        P, o, B, T_ = self.p, self.o, x.shape[0], x.shape[1]
        H, KVH, hd = self.H, self.KVH, self.hd
        q, k, v = x @ P[h + "q_proj"].t(), x @ P[h + "k_proj"].t(), x @ P[h + "v_proj"].t()
        if o.get("bias") == "qkv":  # Qwen2
            q, k, v = q + P[h + "q_bias"], k + P[h + "k_bias"], v + P[h + "v_bias"]
        q, k, v = q.view(B, T_, H, hd), k.view(B, T_, KVH, hd), v.view(B, T_, KVH, hd)
        if o.get("qk_norm"):  # Qwen3: per head, before the rotation
            q, k = self.rms(q, P[h + "q_norm"]), self.rms(k, P[h + "k_norm"])
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        if o.get("position", "rope") == "rope":
            q, k = self.rope(q), self.rope(k)
        k, v = k.repeat_interleave(H // KVH, dim=1), v.repeat_interleave(H // KVH, dim=1)  # repeat_kv
        s = q @ k.transpose(-2, -1) / math.sqrt(hd)
        mask = torch.ones(T_, T_, dtype=torch.bool).tril()
        p = s.masked_fill(~mask, float("-inf")).softmax(-1)
        return (p @ v).transpose(1, 2).reshape(B, T_, H * hd) @ P[h + "o_proj"].t()

    def mlp(self, h, x):
        P = self.p
        return (F.silu(x @ P[h + "gate_proj"].t()) * (x @ P[h + "up_proj"].t())) @ P[h + "down_proj"].t()

    def sublayer(self, h, norm, x, f):
        where = self.o.get("norm", "pre")
        y = f(self.rms(x, self.p[h + norm]) if where == "pre" else x)
        if self.o.get("residual") == "rezero":
            y = self.p[h + "rezero"] * y
        out = x + y
        return self.rms(out, self.p[h + norm]) if where == "post" else out

    def __call__(self, ids, targets):
        x = self.p["embed_tokens"][ids]
        if "wpe" in self.p:
            x = x + self.p["wpe"][: ids.shape[1]]
        for l in range(L):
            h = f"{l}."
            x = self.sublayer(h, "input_layernorm", x, lambda t: self.attention(h, t))
            x = self.sublayer(h, "post_attention_layernorm", x, lambda t: self.mlp(h, t))
        if "norm" in self.p:
            x = self.rms(x, self.p["norm"])
        logits = x @ self.p.get("lm_head", self.p["embed_tokens"]).t()
        return logits, F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))

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
                "n_positions": str(T_POS), "vocab_size": str(V), "layer_norm_epsilon": str(EPS),
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
