#!/usr/bin/python3
"""The stability options against an independent PyTorch implementation of each paper.

  block_parity.py --kiln PATH/kiln --workdir DIR [--backend cpu|vulkan|opencl]

For each block configuration (Post-LN, ReZero, Admin, DeepNorm, sigma-reparam, RealFormer
with a temperature, GAU with relu^2 and with softmax), random weights (and the option's own
tensors, with the option in the safetensors metadata as kiln writes it) go to
`kiln dev parity`, which must give PyTorch's logits, loss and the gradient of every weight,
and the losses of 6 AdamW steps. Exit 0: pass, 1: fail, 77: skipped (no torch here, or the
backend is not available on this machine).
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "samples"))
# parity_checks first: it exits 77 (skipped) where torch or numpy is missing
from parity_checks import kiln_adamw, replay_gpt, run_configs  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from nanogpt_torch import save_safetensors  # noqa: E402

L, H, C, T_POS, V, EPS = 3, 2, 16, 24, 64, 1e-5
BATCH, T, STEPS, LR = 2, 11, 6, 3e-3


class Reference:
    """A GPT whose blocks follow the papers' formulas, written from them (not from kiln)."""

    def __init__(self, o, seed):
        self.o = o
        g = torch.Generator().manual_seed(seed)
        r = lambda *shape, std=0.3: torch.nn.Parameter(torch.randn(*shape, generator=g) * std)
        self.p = {}  # checkpoint name -> leaf tensor (names hold dots, which nn.Module refuses)
        self.buffers_ = {}
        P = self.p
        P["wte.weight"], P["wpe.weight"] = r(V, C), r(T_POS, C)
        gau, s, e = o.get("layer") == "gau", o.get("gau_s", 8), 2 * C
        for l in range(L):
            h = f"h.{l}."
            if o.get("norm", "pre") != "none":
                P[h + "ln_1.weight"], P[h + "ln_1.bias"] = torch.nn.Parameter(1 + r(C, std=0.1)), r(C, std=0.1)
                if not gau:
                    P[h + "ln_2.weight"], P[h + "ln_2.bias"] = torch.nn.Parameter(1 + r(C, std=0.1)), r(C, std=0.1)
            linears = ({"gau.uvz": (C, 2 * e + s), "gau.o": (e, C)} if gau else
                       {"attn.c_attn": (C, 3 * C), "attn.c_proj": (C, C), "mlp.c_fc": (C, 4 * C), "mlp.c_proj": (4 * C, C)})
            for stem, (i, j) in linears.items():
                P[h + stem + ".weight"], P[h + stem + ".bias"] = r(i, j), r(j, std=0.1)
            if gau:
                P[h + "gau.qk.scale"] = torch.nn.Parameter(1 + r(2, s))
                P[h + "gau.qk.offset"] = r(2, s, std=0.1)
            if o.get("residual") == "rezero":
                P[h + "rezero.alpha"] = torch.nn.Parameter(torch.tensor([0.7]))
            if o.get("residual") == "admin":
                P[h + "admin.omega_1"] = torch.nn.Parameter(1.3 + r(C, std=0.1))
                if not gau:
                    P[h + "admin.omega_2"] = torch.nn.Parameter(1.6 + r(C, std=0.1))
            if o.get("sigma_reparam"):
                for stem, (i, j) in linears.items():
                    W = P[h + stem + ".weight"].detach().double()
                    U, S, Vh = torch.linalg.svd(W)
                    # u, v near (not at) the top singular pair, as a run mid-training has them
                    u = U[:, 0] + 0.05 * torch.randn(i, generator=g, dtype=torch.float64)
                    v = Vh[0] + 0.05 * torch.randn(j, generator=g, dtype=torch.float64)
                    self.buffers_[h + stem + ".sigma_u"] = (u / u.norm()).float()
                    self.buffers_[h + stem + ".sigma_v"] = (v / v.norm()).float()
                    P[h + stem + ".sigma_gamma"] = torch.nn.Parameter(torch.tensor([float(S[0]) * 1.1]))
        if o.get("norm", "pre") == "pre":
            P["ln_f.weight"], P["ln_f.bias"] = torch.nn.Parameter(1 + r(C, std=0.1)), r(C, std=0.1)

    def linear(self, h, stem, x):
        W = self.p[h + stem + ".weight"]
        if self.o.get("sigma_reparam"):
            u, v = self.buffers_[h + stem + ".sigma_u"], self.buffers_[h + stem + ".sigma_v"]
            W = W * (self.p[h + stem + ".sigma_gamma"] / (u @ W @ v))  # Zhai et al.: gamma / sigma(W) W
        return x @ W + self.p[h + stem + ".bias"]

    def ln(self, h, which, x):
        return F.layer_norm(x, (C,), self.p[h + which + ".weight"], self.p[h + which + ".bias"], EPS)

    def attention(self, h, x, state):
        B, T_, _ = x.shape
        q, k, v = self.linear(h, "attn.c_attn", x).split(C, dim=2)
        q, k, v = (t.view(B, T_, H, C // H).transpose(1, 2) for t in (q, k, v))
        s = q @ k.transpose(-2, -1) / math.sqrt(C // H)
        if self.o.get("residual_attention"):  # RealFormer: raw scores add up across layers
            if state.get("scores") is not None:
                s = s + state["scores"]
            state["scores"] = s
        s = s / self.o.get("attn_temperature", 1.0)
        mask = torch.ones(T_, T_, dtype=torch.bool).tril()
        p = s.masked_fill(~mask, float("-inf")).softmax(-1)
        return self.linear(h, "attn.c_proj", (p @ v).transpose(1, 2).reshape(B, T_, C))

    def mlp(self, h, x):
        return self.linear(h, "mlp.c_proj", F.gelu(self.linear(h, "mlp.c_fc", x), approximate="tanh"))

    def gau(self, h, x):
        """FLASH: U, V = SiLU(xWu), SiLU(xWv); Z = SiLU(xWz); Q, K = scale-offset of Z;
        A = relu(QK^T / sqrt(s))^2 / n (causal) or softmax; O = (U * AV) Wo."""
        s, e, T_ = self.o.get("gau_s", 8), 2 * C, x.shape[1]
        u, v, z = F.silu(self.linear(h, "gau.uvz", x)).split([e, e, s], dim=2)
        g, b = self.p[h + "gau.qk.scale"], self.p[h + "gau.qk.offset"]
        q, k = z * g[0] + b[0], z * g[1] + b[1]
        scores = q @ k.transpose(-2, -1) / math.sqrt(s) / self.o.get("attn_temperature", 1.0)
        mask = torch.ones(T_, T_, dtype=torch.bool).tril()
        if self.o.get("gau_attn") == "softmax":
            a = scores.masked_fill(~mask, float("-inf")).softmax(-1)
        else:
            n = torch.arange(1, T_ + 1, dtype=torch.float32).view(T_, 1)
            a = torch.relu(scores).square().masked_fill(~mask, 0.0) / n
        return self.linear(h, "gau.o", u * (a @ v))

    def sublayer(self, h, i, x, f):
        o, res = self.o, self.o.get("residual", "plain")
        ln = "ln_1" if i == 0 else "ln_2"
        inp = self.ln(h, ln, x) if o.get("norm", "pre") == "pre" else x
        y = f(inp)
        if res == "rezero":
            y = self.p[h + "rezero.alpha"] * y
        skip = x
        if res == "admin":
            skip = x * self.p[h + f"admin.omega_{i + 1}"]
        if res == "deepnorm":
            skip = x * (2 * L) ** 0.25  # decoder-only: alpha = (2N)^(1/4)
        out = skip + y
        return self.ln(h, ln, out) if o.get("norm", "pre") == "post" else out

    def __call__(self, ids, targets):
        x = self.p["wte.weight"][ids] + self.p["wpe.weight"][: ids.shape[1]]
        state = {}
        for l in range(L):
            h = f"h.{l}."
            if self.o.get("layer") == "gau":
                x = self.sublayer(h, 0, x, lambda t: self.gau(h, t))
            else:
                x = self.sublayer(h, 0, x, lambda t: self.attention(h, t, state))
                x = self.sublayer(h, 1, x, lambda t: self.mlp(h, t))
        if "ln_f.weight" in self.p:
            x = F.layer_norm(x, (C,), self.p["ln_f.weight"], self.p["ln_f.bias"], EPS)
        logits = x @ self.p["wte.weight"].t()
        return logits, F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))

    def save(self, path):
        o = self.o
        meta = {"n_layer": str(L), "n_head": str(H), "n_embd": str(C), "n_positions": str(T_POS),
                "vocab_size": str(V), "layer_norm_epsilon": str(EPS), "format": "pt",
                "kiln.norm": o.get("norm", "pre"), "kiln.residual": o.get("residual", "plain"),
                "kiln.layer_type": o.get("layer", "transformer"), "kiln.gau_attn": o.get("gau_attn", "relu2"),
                "kiln.gau_s": str(o.get("gau_s", 8)), "kiln.sigma_reparam": "1" if o.get("sigma_reparam") else "0",
                "kiln.residual_attention": "1" if o.get("residual_attention") else "0",
                "kiln.attn_temperature": repr(o.get("attn_temperature", 1.0))}
        tensors = {k: v.detach().numpy() for k, v in self.p.items()}
        tensors.update({k: v.numpy() for k, v in self.buffers_.items()})
        save_safetensors(path, tensors, meta)

    def optimizer(self):
        """AdamW with kiln's decay roles: matrices and embeddings decay, scales do not."""
        return kiln_adamw(self.p, LR, (0.9, 0.95),
                          lambda n, p: p.dim() == 2 and not n.endswith(("qk.scale", "qk.offset")))


CONFIGS = [
    ("post_ln", {"norm": "post"}),
    ("rezero_no_norm", {"norm": "none", "residual": "rezero"}),
    ("admin", {"norm": "post", "residual": "admin"}),
    ("deepnorm", {"norm": "post", "residual": "deepnorm"}),
    ("sigma_reparam", {"norm": "pre", "sigma_reparam": 1}),
    ("realformer_temperature", {"norm": "post", "residual_attention": 1, "attn_temperature": 0.7}),
    ("gau_relu2", {"norm": "pre", "layer": "gau", "gau_s": 8}),
    ("gau_softmax_sigma", {"norm": "post", "layer": "gau", "gau_s": 8, "gau_attn": "softmax", "sigma_reparam": 1}),
]


def run_config(args, name, o, seed):
    replay_gpt(args, name, Reference(o, seed), seed, V, BATCH, T, STEPS, LR)


if __name__ == "__main__":
    run_configs(CONFIGS, run_config, 10, "all block options match PyTorch")
