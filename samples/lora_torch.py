#!/usr/bin/python3
"""LoRA in PyTorch, written by hand as PEFT's (Debian's torch 1.13 has no peft): the PyTorch
half of `kiln bench train --lora`, which times this step beside kiln's in the same run.

  lora_torch.py --bench --shape gpt2-small|qwen2.5-0.5b [--layers N] [--lora-rank R] [--lora-alpha A]
                [--lora-targets LIST] [--block 256] [--batch 1] [--steps N] [--warmup-steps N]
        times LoRA training steps on random tokens and prints `tokens_per_s X` and
        `step_ms X` (the median step).

The model is random-init at the named shape, its base frozen in f32 (PyTorch's CPU has no
Q4_0 and trains an f16 base slowly, so f32 is its fast path): GPT-2 small is
samples/nanogpt_torch.py's GPT at GPT-2's sizes; the Qwen2.5-0.5B shape is a Qwen2 block
written from Hugging Face's modeling semantics (RMSNorm, rotate_half rotary positions with
theta 1e6, grouped-query attention, q/k/v biases, down(silu(gate) * up), tied embeddings).
Each target linear gains PEFT's adapter: h = W x + b + (alpha / r) B A dropout(x), A [r, in]
Kaiming-uniform (bound 1 / sqrt(in)), B [out, r] zeros; targets match by PEFT's suffix rule
(a module whose full name is the target or ends in "." + target). AdamW (kiln's recipe:
decay on A and B, clipping) updates the adapters alone; the base has no gradient buffer.
Needs Debian's /usr/bin/python3 (python3-torch, python3-numpy).
"""
import argparse
import math
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nanogpt_torch import GPT, Conv1D, median  # noqa: E402

# GPT-2's four linears of a block and the Llama family's seven (PEFT's module names)
GPT2_TARGETS = ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")
LLAMA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

SHAPES = {
    "gpt2-small": {"family": "gpt2", "n_layer": 12, "n_head": 12, "n_embd": 768, "n_positions": 1024,
                   "vocab_size": 50257, "layer_norm_epsilon": 1e-5},
    "qwen2.5-0.5b": {"family": "qwen2", "n_layer": 24, "n_head": 14, "n_kv_head": 2, "head_dim": 64,
                     "n_embd": 896, "n_ffn": 4864, "vocab_size": 151936, "rms_norm_eps": 1e-6,
                     "rope_theta": 1e6},
}


class LoRA(nn.Module):
    """PEFT's LoraLayer around a frozen linear: base(x) + scale * B(A(dropout(x)))."""

    def __init__(self, base, n_in, n_out, rank, alpha, dropout):
        super().__init__()
        self.base = base
        for p in base.parameters():
            p.requires_grad_(False)
        self.lora_A = nn.Parameter(torch.empty(rank, n_in))
        self.lora_B = nn.Parameter(torch.zeros(n_out, rank))
        bound = 1.0 / math.sqrt(n_in)  # kaiming_uniform_(a=sqrt(5)) on an [r, in] weight
        nn.init.uniform_(self.lora_A, -bound, bound)
        self.scale = alpha / rank
        self.dropout = dropout

    def forward(self, x):
        h = F.dropout(x, self.dropout, self.training) if self.dropout else x
        return self.base(x) + self.scale * ((h @ self.lora_A.t()) @ self.lora_B.t())


def sides(module):
    """(in, out) of a Conv1D (weight [in, out]) or an nn.Linear (weight [out, in])."""
    w = module.weight
    return (w.shape[0], w.shape[1]) if isinstance(module, Conv1D) else (w.shape[1], w.shape[0])


def add_lora(model, targets, rank, alpha, dropout=0.0):
    """Freezes every weight of model and wraps each linear whose full name matches one of
    targets (PEFT's suffix rule). Returns the adapters' parameters; a target that matches
    nothing is an error, as PEFT's."""
    for p in model.parameters():
        p.requires_grad_(False)
    matched, params = set(), []
    for name, module in list(model.named_modules()):
        if not isinstance(module, (Conv1D, nn.Linear)):
            continue
        hits = [t for t in targets if name == t or name.endswith("." + t)]
        if not hits:
            continue
        matched.update(hits)
        n_in, n_out = sides(module)
        if rank > min(n_in, n_out):
            raise ValueError(f"rank {rank} is larger than {name}'s smaller side {min(n_in, n_out)}")
        parent_name, _, child = name.rpartition(".")
        wrapped = LoRA(module, n_in, n_out, rank, alpha, dropout)
        setattr(model.get_submodule(parent_name), child, wrapped)
        params += [wrapped.lora_A, wrapped.lora_B]
    missing = [t for t in targets if t not in matched]
    if missing:
        raise ValueError(f"target {missing[0]} matches no module")
    return params


# ---- the Qwen2 block, from Hugging Face's Qwen2ForCausalLM semantics ----

class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class QwenAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C, H, KV, D = cfg["n_embd"], cfg["n_head"], cfg["n_kv_head"], cfg["head_dim"]
        self.H, self.KV, self.D = H, KV, D
        self.q_proj = nn.Linear(C, H * D, bias=True)
        self.k_proj = nn.Linear(C, KV * D, bias=True)
        self.v_proj = nn.Linear(C, KV * D, bias=True)
        self.o_proj = nn.Linear(H * D, C, bias=False)

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.H, self.D).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.KV, self.D).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.KV, self.D).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k, v = (t.repeat_interleave(self.H // self.KV, dim=1) for t in (k, v))  # repeat_kv
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.D)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        return self.o_proj((att @ v).transpose(1, 2).reshape(B, T, self.H * self.D))


class QwenMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.gate_proj = nn.Linear(cfg["n_embd"], cfg["n_ffn"], bias=False)
        self.up_proj = nn.Linear(cfg["n_embd"], cfg["n_ffn"], bias=False)
        self.down_proj = nn.Linear(cfg["n_ffn"], cfg["n_embd"], bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class QwenLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg["n_embd"], cfg["rms_norm_eps"])
        self.self_attn = QwenAttention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg["n_embd"], cfg["rms_norm_eps"])
        self.mlp = QwenMLP(cfg)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class QwenModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["n_embd"])
        self.layers = nn.ModuleList(QwenLayer(cfg) for _ in range(cfg["n_layer"]))
        self.norm = RMSNorm(cfg["n_embd"], cfg["rms_norm_eps"])


class Qwen2(nn.Module):
    """Module names as HF's (model.layers.N.self_attn.q_proj, ...), the head tied to the embedding."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = dict(cfg)
        self.model = QwenModel(cfg)

    def init_weights(self):
        for name, p in self.named_parameters():
            if p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.02)
            elif "norm" in name:
                nn.init.ones_(p)
            else:
                nn.init.zeros_(p)

    def forward(self, ids, targets):
        T, D = ids.shape[1], self.cfg["head_dim"]
        inv = 1.0 / (self.cfg["rope_theta"] ** (torch.arange(0, D, 2, dtype=torch.float32) / D))
        angles = torch.outer(torch.arange(T, dtype=torch.float32), inv)
        angles = torch.cat((angles, angles), dim=-1).to(ids.device)
        cos, sin = angles.cos(), angles.sin()
        x = self.model.embed_tokens(ids)
        for layer in self.model.layers:
            x = layer(x, cos, sin)
        logits = self.model.norm(x) @ self.model.embed_tokens.weight.t()
        return logits, F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def build(shape, layers=0):
    cfg = dict(SHAPES[shape])
    if layers:
        cfg["n_layer"] = layers
    model = GPT(cfg) if cfg["family"] == "gpt2" else Qwen2(cfg)
    model.init_weights()
    return model, (GPT2_TARGETS if cfg["family"] == "gpt2" else LLAMA_TARGETS)


def run_bench(args):
    torch.manual_seed(args.seed)
    model, every = build(args.shape, args.layers)
    targets = args.lora_targets.split(",") if args.lora_targets else list(every)
    params = add_lora(model, targets, args.lora_rank, args.lora_alpha)
    opt = torch.optim.AdamW(params, lr=args.lr, betas=(args.beta1, args.beta2), eps=1e-8,
                            weight_decay=args.weight_decay)
    vocab = model.cfg["vocab_size"]
    step_s = []
    for step in range(args.warmup_steps + args.steps):
        ids = torch.randint(vocab, (args.batch, args.block + 1))
        start = time.time()
        _, loss = model(ids[:, :-1], ids[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if args.clip > 0:
            torch.nn.utils.clip_grad_norm_(params, args.clip)
        opt.step()
        loss.item()
        if step >= args.warmup_steps:
            step_s.append(time.time() - start)
    n_base = sum(p.numel() for p in model.parameters() if not p.requires_grad)
    n_lora = sum(p.numel() for p in params)
    print(f"torch {torch.__version__}, cpu, {torch.get_num_threads()} threads; {args.shape}, f32 base "
          f"{n_base / 1e6:.1f}M frozen, LoRA rank {args.lora_rank}: {n_lora / 1e6:.2f}M trained")
    print(f"step_ms {1e3 * median(step_s):.1f}")
    print(f"tokens_per_s {args.batch * args.block / median(step_s):.1f}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bench", action="store_true")
    p.add_argument("--shape", choices=sorted(SHAPES), default="gpt2-small")
    p.add_argument("--layers", type=int, default=0, help="blocks (0: the shape's own)")
    p.add_argument("--lora-rank", type=int, default=8)
    p.add_argument("--lora-alpha", type=float, default=8.0)
    p.add_argument("--lora-targets", default="", help="comma separated; empty: every linear of the blocks")
    p.add_argument("--block", type=int, default=256)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--warmup-steps", type=int, default=1)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.999)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--threads", type=int, default=0, help="0: one per CPU")
    args = p.parse_args()
    torch.set_num_threads(args.threads or os.cpu_count() or 1)
    if not args.bench:
        p.error("give --bench")
    if args.lora_rank <= 0:
        p.error("--lora-rank must be positive")
    try:
        run_bench(args)
    except ValueError as e:
        p.error(str(e))


if __name__ == "__main__":
    main()
