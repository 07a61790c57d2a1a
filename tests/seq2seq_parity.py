#!/usr/bin/python3
"""kiln's encoder-decoder against an independent PyTorch Transformer (Vaswani et al. 2017).

  seq2seq_parity.py --kiln PATH/kiln --workdir DIR [--backend cpu|vulkan|opencl]

For each configuration (Post-LN as in the paper, Pre-LN, DeepNorm with its encoder-decoder
constants, Admin, sigma-reparam on every linear including cross-attention's, separate
source and target vocabularies), random weights go to `kiln dev seq2seq-parity` with a
padded batch (rows of different source and target lengths), which must give PyTorch's
logits, label-smoothed loss, the gradient of every weight, and the losses of 6 AdamW steps.
The reference is written from the paper, not from kiln: nn-free tensors, an explicit key
padding mask, a causal mask, cross-attention, ReLU, tied output. Exit 0: pass, 1: fail,
77: skipped (no torch here, or the backend is not available on this machine).
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "samples"))
# parity_checks first: it exits 77 (skipped) where torch or numpy is missing
from parity_checks import (adamw_losses, check, check_gradients, check_losses, kiln_adamw, kiln_dev,  # noqa: E402
                           rel_err, run_configs)
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from nanogpt_torch import load_safetensors, save_safetensors  # noqa: E402

N_ENC, N_DEC, H, C, MAX_LEN, EPS = 2, 3, 2, 16, 12, 1e-5
V_SRC, V_TGT, STEPS, LR, SMOOTHING = 23, 19, 6, 3e-3, 0.1


def sinusoids(T, C):
    pos = torch.arange(T, dtype=torch.float64).unsqueeze(1)
    i = torch.arange(0, C, 2, dtype=torch.float64)
    angle = pos / torch.pow(10000.0, i / C)
    pe = torch.zeros(T, C, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return pe.float()


class Reference:
    def __init__(self, o, seed):
        self.o = o
        g = torch.Generator().manual_seed(seed)
        r = lambda *shape, std=0.3: torch.nn.Parameter(torch.randn(*shape, generator=g) * std)
        self.p, self.buffers_ = {}, {}
        P = self.p
        shared = o.get("shared", True)
        if shared:
            P["embed.weight"] = r(V_SRC, C)
        else:
            P["src_embed.weight"], P["tgt_embed.weight"] = r(V_SRC, C), r(V_TGT, C)
        norm, res = o.get("norm", "post"), o.get("residual", "plain")

        def block(prefix, cross):
            lns = ["ln_1", "ln_2"] + (["ln_cross"] if cross else [])
            if norm != "none":
                for ln in lns:
                    P[prefix + ln + ".weight"], P[prefix + ln + ".bias"] = torch.nn.Parameter(1 + r(C, std=0.1)), r(C, std=0.1)
            linears = {"attn.c_attn": (C, 3 * C), "attn.c_proj": (C, C), "mlp.c_fc": (C, 4 * C), "mlp.c_proj": (4 * C, C)}
            if cross:
                linears.update({"cross.q": (C, C), "cross.kv": (C, 2 * C), "cross.c_proj": (C, C)})
            for stem, (i, j) in linears.items():
                P[prefix + stem + ".weight"], P[prefix + stem + ".bias"] = r(i, j), r(j, std=0.1)
            if res == "admin":
                P[prefix + "admin.omega_1"] = torch.nn.Parameter(1.3 + r(C, std=0.1))
                P[prefix + "admin.omega_2"] = torch.nn.Parameter(1.6 + r(C, std=0.1))
                if cross:
                    P[prefix + "admin.omega_cross"] = torch.nn.Parameter(1.4 + r(C, std=0.1))
            if o.get("sigma_reparam"):
                for stem, (i, j) in linears.items():
                    W = P[prefix + stem + ".weight"].detach().double()
                    U, S, Vh = torch.linalg.svd(W)
                    u = U[:, 0] + 0.05 * torch.randn(i, generator=g, dtype=torch.float64)
                    v = Vh[0] + 0.05 * torch.randn(j, generator=g, dtype=torch.float64)
                    self.buffers_[prefix + stem + ".sigma_u"] = (u / u.norm()).float()
                    self.buffers_[prefix + stem + ".sigma_v"] = (v / v.norm()).float()
                    P[prefix + stem + ".sigma_gamma"] = torch.nn.Parameter(torch.tensor([float(S[0]) * 1.1]))

        for l in range(N_ENC):
            block(f"encoder.h.{l}.", False)
        if norm == "pre":
            P["encoder.ln_f.weight"], P["encoder.ln_f.bias"] = torch.nn.Parameter(1 + r(C, std=0.1)), r(C, std=0.1)
        for l in range(N_DEC):
            block(f"decoder.h.{l}.", True)
        if norm == "pre":
            P["decoder.ln_f.weight"], P["decoder.ln_f.bias"] = torch.nn.Parameter(1 + r(C, std=0.1)), r(C, std=0.1)
        self.pe = sinusoids(MAX_LEN, C)

    def embeds(self):
        if "embed.weight" in self.p:
            return self.p["embed.weight"], self.p["embed.weight"]
        return self.p["src_embed.weight"], self.p["tgt_embed.weight"]

    def linear(self, h, stem, x):
        W = self.p[h + stem + ".weight"]
        if self.o.get("sigma_reparam"):
            u, v = self.buffers_[h + stem + ".sigma_u"], self.buffers_[h + stem + ".sigma_v"]
            W = W * (self.p[h + stem + ".sigma_gamma"] / (u @ W @ v))
        return x @ W + self.p[h + stem + ".bias"]

    def ln(self, h, which, x):
        return F.layer_norm(x, (C,), self.p[h + which + ".weight"], self.p[h + which + ".bias"], EPS)

    @staticmethod
    def heads(t):
        B, T, _ = t.shape
        return t.view(B, T, H, C // H).transpose(1, 2)

    def attend(self, q, k, v, allowed):
        """allowed: bool [B, 1 or Tq, Tk]; a masked key gets probability 0."""
        s = self.heads(q) @ self.heads(k).transpose(-2, -1) / math.sqrt(C // H)
        s = s.masked_fill(~allowed.unsqueeze(1), float("-inf"))
        p = s.softmax(-1)
        B, _, Tq, _ = p.shape
        return (p @ self.heads(v)).transpose(1, 2).reshape(B, Tq, C)

    def sublayer(self, h, ln, omega, x, f, alpha):
        o, res = self.o, self.o.get("residual", "plain")
        y = f(self.ln(h, ln, x) if o.get("norm", "post") == "pre" else x)
        skip = x
        if res == "admin":
            skip = x * self.p[h + omega]
        if res == "deepnorm":
            skip = x * alpha
        out = skip + y
        return self.ln(h, ln, out) if o.get("norm", "post") == "post" else out

    def mlp(self, h, x):
        return self.linear(h, "mlp.c_proj", torch.relu(self.linear(h, "mlp.c_fc", x)))

    def __call__(self, src, src_len, tgt_in, tgt_out):
        E_src, E_tgt = self.embeds()
        B, S = src.shape
        T = tgt_in.shape[1]
        key_ok = torch.arange(S).view(1, 1, S) < src_len.view(B, 1, 1)  # [B, 1, S]
        causal = torch.ones(T, T, dtype=torch.bool).tril().unsqueeze(0)  # [1, T, T]
        a_enc = 0.81 * (N_ENC ** 4 * N_DEC) ** (1 / 16)
        a_dec = (3 * N_DEC) ** 0.25
        x = E_src[src] * math.sqrt(C) + self.pe[:S]
        for l in range(N_ENC):
            h = f"encoder.h.{l}."

            def self_attn(t):
                q, k, v = self.linear(h, "attn.c_attn", t).split(C, dim=2)
                return self.linear(h, "attn.c_proj", self.attend(q, k, v, key_ok))

            x = self.sublayer(h, "ln_1", "admin.omega_1", x, self_attn, a_enc)
            x = self.sublayer(h, "ln_2", "admin.omega_2", x, lambda t: self.mlp(h, t), a_enc)
        if "encoder.ln_f.weight" in self.p:
            x = F.layer_norm(x, (C,), self.p["encoder.ln_f.weight"], self.p["encoder.ln_f.bias"], EPS)
        memory = x
        y = E_tgt[tgt_in] * math.sqrt(C) + self.pe[:T]
        for l in range(N_DEC):
            h = f"decoder.h.{l}."

            def self_attn(t):
                q, k, v = self.linear(h, "attn.c_attn", t).split(C, dim=2)
                return self.linear(h, "attn.c_proj", self.attend(q, k, v, causal.expand(B, T, T)))

            def cross_attn(t):
                q = self.linear(h, "cross.q", t)
                k, v = self.linear(h, "cross.kv", memory).split(C, dim=2)
                return self.linear(h, "cross.c_proj", self.attend(q, k, v, key_ok))

            y = self.sublayer(h, "ln_1", "admin.omega_1", y, self_attn, a_dec)
            y = self.sublayer(h, "ln_cross", "admin.omega_cross", y, cross_attn, a_dec)
            y = self.sublayer(h, "ln_2", "admin.omega_2", y, lambda t: self.mlp(h, t), a_dec)
        if "decoder.ln_f.weight" in self.p:
            y = F.layer_norm(y, (C,), self.p["decoder.ln_f.weight"], self.p["decoder.ln_f.bias"], EPS)
        logits = y @ E_tgt.t()
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1), ignore_index=-1,
                               label_smoothing=SMOOTHING)
        return logits, loss

    def save(self, path):
        o = self.o
        shared = "embed.weight" in self.p
        meta = {"format": "pt", "model_type": "kiln-seq2seq", "enc_layers": str(N_ENC), "dec_layers": str(N_DEC),
                "n_head": str(H), "n_embd": str(C), "max_len": str(MAX_LEN), "src_vocab": str(V_SRC),
                "tgt_vocab": str(V_SRC if shared else V_TGT), "shared_vocab": "1" if shared else "0",
                "layer_norm_epsilon": str(EPS), "kiln.norm": o.get("norm", "post"),
                "kiln.residual": o.get("residual", "plain"),
                "kiln.sigma_reparam": "1" if o.get("sigma_reparam") else "0"}
        tensors = {k: v.detach().numpy() for k, v in self.p.items()}
        tensors.update({k: v.numpy() for k, v in self.buffers_.items()})
        save_safetensors(path, tensors, meta)

    def optimizer(self):
        """AdamW with kiln's decay roles: matrices and embeddings decay, the rest does not."""
        return kiln_adamw(self.p, LR, (0.9, 0.99))


CONFIGS = [
    ("post_ln", {"norm": "post"}),
    ("pre_ln_separate_vocab", {"norm": "pre", "shared": False}),
    ("deepnorm", {"norm": "post", "residual": "deepnorm"}),
    ("admin", {"norm": "post", "residual": "admin", "shared": False}),
    ("sigma_reparam", {"norm": "pre", "sigma_reparam": 1}),
]


def make_batch(seed, v_src, v_tgt):
    """Three rows of different source (with EOS) and target lengths, padded with junk ids."""
    g = torch.Generator().manual_seed(seed)
    src_len = torch.tensor([7, 4, 2])
    tgt_len = torch.tensor([5, 8, 3])  # decoder steps: BOS + tokens, predicting tokens + EOS
    S, T = 7, 8
    src = torch.randint(0, v_src, (3, S), generator=g)
    tgt_in = torch.randint(0, v_tgt, (3, T), generator=g)
    tgt_out = torch.randint(0, v_tgt, (3, T), generator=g)
    for b in range(3):
        tgt_out[b, tgt_len[b]:] = -1
    return src, src_len, tgt_in, tgt_out


def run_config(args, name, o, seed):
    model = Reference(o, seed)
    weights = os.path.join(args.workdir, f"{name}.safetensors")
    batch_path = os.path.join(args.workdir, f"{name}_batch.safetensors")
    result = os.path.join(args.workdir, f"{name}_kiln.safetensors")
    model.save(weights)
    v_tgt = V_SRC if o.get("shared", True) else V_TGT
    src, src_len, tgt_in, tgt_out = make_batch(seed + 100, V_SRC, v_tgt)
    save_safetensors(batch_path, {"src": src.numpy().astype(np.int64), "src_len": src_len.numpy().astype(np.int64),
                                  "tgt_in": tgt_in.numpy().astype(np.int64),
                                  "tgt_out": tgt_out.numpy().astype(np.int64)})
    if not kiln_dev(args, name, "seq2seq-parity", "--ckpt", weights, "--batch", batch_path, "--out", result,
                    "--steps", str(STEPS), "--lr", str(LR), "--label-smoothing", str(SMOOTHING)):
        return
    got, _ = load_safetensors(result)
    logits, loss = model(src, src_len, tgt_in, tgt_out)
    loss.backward()
    # padded query rows are computed by both but mean nothing: compare the real ones
    real = (tgt_out != -1).numpy()
    e = rel_err(got["logits"][real], logits.detach().numpy()[real])
    check(f"{name}: logits", e < 1e-5, f"relative error {e:.2e}")
    e = rel_err(got["loss"], [loss.item()])
    check(f"{name}: loss", e < 1e-6, f"relative error {e:.2e}")
    check_gradients(f"{name}: ", got, model.p)
    losses = adamw_losses(model, STEPS, lambda _: model(src, src_len, tgt_in, tgt_out)[1])
    check_losses(f"{name}: ", got, losses)


if __name__ == "__main__":
    run_configs(CONFIGS, run_config, 20, "the encoder-decoder matches PyTorch")
