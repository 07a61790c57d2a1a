"""A float64 PyTorch forward of LlamaForCausalLM, Qwen2ForCausalLM and Qwen3ForCausalLM,
written from Hugging Face transformers' modeling code (modeling_llama.py, modeling_qwen2.py,
modeling_qwen3.py) and reading the folder's config.json and safetensors as they do:
RMSNorm (x * rsqrt(mean(x^2) + eps) * weight), rotary embeddings with rotate_half on the
two halves of each head and inv_freq from rope_theta (llama3 scaling as
_compute_llama3_parameters), repeat_kv for grouped-query attention, eager causal attention
scaled by head_dim^-0.5, SwiGLU MLP down(silu(gate(x)) * up(x)), Qwen2's q/k/v biases,
Qwen3's per-head RMSNorm of q and k before the rotation, and the head tied to the embedding
when tie_word_embeddings. transformers is not in Debian 12; this stands in for it.

llama_parity.py's training replay computes with the same methods (its Reference is a
subclass that holds its weights as parameters).

    reference.py FOLDER 1,2,3 [N]   prints the greedy continuation of N (32) tokens
"""
import os
import sys

import torch

import hf_folder

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from hf_rope import default_inv_freq, llama3_inv_freq, rotate_half  # noqa: E402


class Reference:
    def __init__(self, folder):
        self.cfg, tensors = hf_folder.read(folder)
        self.w = {k: torch.from_numpy(v.astype("float64")) for k, v in tensors.items()}
        c = self.cfg
        self.H, self.KV = c["num_attention_heads"], c["num_key_value_heads"]
        self.D = c.get("head_dim") or c["hidden_size"] // self.H
        self.eps = c["rms_norm_eps"]
        self.inv_freq = inv_freq(c, self.D)
        head = "model.embed_tokens.weight" if c.get("tie_word_embeddings") else "lm_head.weight"
        self.head = self.w[head]

    def rotary(self, T):
        """cos and sin of HF's cat(freqs, freqs) for positions 0..T-1."""
        freqs = torch.arange(T, dtype=torch.float64)[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()

    def rmsnorm(self, x, weight):
        return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))

    def attention(self, x, p, cos, sin):
        B, T, _ = x.shape
        w = self.w
        proj = lambda t: self.linear(x, p + f"self_attn.{t}_proj")
        q = proj("q").view(B, T, self.H, self.D)
        k = proj("k").view(B, T, self.KV, self.D)
        v = proj("v").view(B, T, self.KV, self.D).transpose(1, 2)
        if p + "self_attn.q_norm.weight" in w:  # Qwen3: per head, before the rotation
            q = self.rmsnorm(q, w[p + "self_attn.q_norm.weight"])
            k = self.rmsnorm(k, w[p + "self_attn.k_norm.weight"])
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        groups = self.H // self.KV  # repeat_kv
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        scores = (q @ k.transpose(2, 3)) * self.D ** -0.5
        causal = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
        a = torch.softmax(scores + causal, dim=-1) @ v
        return self.linear(a.transpose(1, 2).reshape(B, T, self.H * self.D), p + "self_attn.o_proj")

    def mlp(self, x, p):
        gate = self.linear(x, p + "mlp.gate_proj")
        return self.linear(torch.nn.functional.silu(gate) * self.linear(x, p + "mlp.up_proj"), p + "mlp.down_proj")

    def linear(self, x, module):
        """nn.Linear's x W^T + b of the module named so ("model.layers.0.self_attn.q_proj"):
        the one place a projection is computed, so an adapter can wrap it (tests/lora_reference.py)."""
        w = self.w
        bias = w.get(module + ".bias")
        y = x @ w[module + ".weight"].T
        return y if bias is None else y + bias

    def logits(self, ids):
        """ids: LongTensor [B, T] -> float64 logits [B, T, V]."""
        w = self.w
        x = w["model.embed_tokens.weight"][ids]
        cos, sin = self.rotary(ids.shape[1])
        for i in range(self.cfg["num_hidden_layers"]):
            p = f"model.layers.{i}."
            x = x + self.attention(self.rmsnorm(x, w[p + "input_layernorm.weight"]), p, cos, sin)
            x = x + self.mlp(self.rmsnorm(x, w[p + "post_attention_layernorm.weight"]), p)
        return self.rmsnorm(x, w["model.norm.weight"]) @ self.head.T

    def greedy(self, prompt, n):
        """The n greedy tokens after prompt, and each step's margin: the best logit less the
        second best, over the spread (standard deviation) of that step's logits."""
        ids, margins = list(prompt), []
        for _ in range(n):
            last = self.logits(torch.tensor([ids]))[0, -1]
            top = torch.topk(last, 2).values
            margins.append(float((top[0] - top[1]) / last.std()))
            ids.append(int(torch.argmax(last)))
        return ids[len(prompt):], margins


def inv_freq(cfg, dim):
    """The inverse frequencies config.json asks for: rope_theta's, then llama3's scaling
    when rope_scaling's rope_type is llama3."""
    f = default_inv_freq(cfg.get("rope_theta", 10000.0), dim)
    s = cfg.get("rope_scaling")
    if not s:
        return f
    if s.get("rope_type", s.get("type")) != "llama3":
        raise ValueError(f"rope_scaling {s} is not one the reference knows")
    return llama3_inv_freq(f, s["factor"], s["low_freq_factor"], s["high_freq_factor"],
                           s["original_max_position_embeddings"])


if __name__ == "__main__":
    torch.set_num_threads(1)
    ref = Reference(sys.argv[1])
    tokens, _ = ref.greedy([int(t) for t in sys.argv[2].split(",")], int(sys.argv[3]) if len(sys.argv) > 3 else 32)
    print(" ".join(map(str, tokens)))
