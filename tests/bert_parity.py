#!/usr/bin/python3
"""kiln's BERT masked LM against an independent PyTorch BERT (Hugging Face's BertForMaskedLM
architecture, written here from its definition, not from kiln).

  bert_parity.py --kiln PATH/kiln --workdir DIR [--backend cpu|vulkan|opencl]

For each configuration (Post-LN as BERT, Pre-LN with its final LayerNorm, Pre-LN with
sigma-reparam on every linear, DeepNorm with its encoder-only constants), random weights are
written in Hugging Face's tensor names and layouts (nn.Linear [out, in], separate query, key
and value) with the config in the safetensors metadata, and a padded batch (rows of
different lengths, junk ids in the padding, targets at a few positions of each row) goes to
`kiln dev bert-parity`, which must give this reference's logits at every position, MLM loss,
the gradient of every weight (in Hugging Face's layout) and the losses of 6 AdamW steps.
The reference: word + position + token-type-0 embeddings, LayerNorm; self-attention with an
explicit key padding mask; GELU (tanh form: Hugging Face's "gelu_new"); the head dense ->
GELU -> LayerNorm -> tied decoder + bias; cross-entropy with ignore_index -1.
Exit 0: pass, 1: fail, 77: skipped (no torch here, or the backend is not available).
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "samples"))
# parity_checks first: it exits 77 (skipped) where torch or numpy is missing
from parity_checks import adamw_losses, check, check_losses, kiln_adamw, kiln_dev, rel_err, run_configs  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from nanogpt_torch import load_safetensors, save_safetensors  # noqa: E402

L, H, C, P, V, EPS, STEPS, LR = 2, 2, 16, 12, 23, 1e-12, 6, 3e-3
ROWS, WIDTH = 3, 9
LENGTHS = [9, 6, 4]


class Reference:
    def __init__(self, o, seed):
        self.o = o
        g = torch.Generator().manual_seed(seed)
        r = lambda *shape, std=0.3: torch.nn.Parameter(torch.randn(*shape, generator=g) * std)
        ln = lambda: (torch.nn.Parameter(1 + r(C, std=0.1).detach()), r(C, std=0.1))
        P_ = self.p = {}
        self.buffers_ = {}
        P_["bert.embeddings.word_embeddings.weight"] = r(V, C)
        P_["bert.embeddings.position_embeddings.weight"] = r(P, C)
        P_["bert.embeddings.token_type_embeddings.weight"] = r(2, C)
        P_["bert.embeddings.LayerNorm.weight"], P_["bert.embeddings.LayerNorm.bias"] = ln()
        for l in range(L):
            h = f"bert.encoder.layer.{l}."
            for stem, (o_, i_) in {"attention.self.query": (C, C), "attention.self.key": (C, C),
                                   "attention.self.value": (C, C), "attention.output.dense": (C, C),
                                   "intermediate.dense": (4 * C, C), "output.dense": (C, 4 * C)}.items():
                P_[h + stem + ".weight"], P_[h + stem + ".bias"] = r(o_, i_), r(o_, std=0.1)
            for which in ("attention.output.LayerNorm", "output.LayerNorm"):
                P_[h + which + ".weight"], P_[h + which + ".bias"] = ln()
            if o.get("sigma_reparam"):
                for stem in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"):
                    W = self.conv1d(h, stem).detach().double()
                    U, S, Vh = torch.linalg.svd(W)
                    u = U[:, 0] + 0.05 * torch.randn(W.shape[0], generator=g, dtype=torch.float64)
                    v = Vh[0] + 0.05 * torch.randn(W.shape[1], generator=g, dtype=torch.float64)
                    self.buffers_[h + "kiln." + stem + ".sigma_u"] = (u / u.norm()).float()
                    self.buffers_[h + "kiln." + stem + ".sigma_v"] = (v / v.norm()).float()
                    P_[h + "kiln." + stem + ".sigma_gamma"] = torch.nn.Parameter(torch.tensor([float(S[0]) * 1.1]))
        if o.get("norm", "post") == "pre":
            P_["bert.encoder.kiln.ln_f.weight"], P_["bert.encoder.kiln.ln_f.bias"] = ln()
        P_["cls.predictions.transform.dense.weight"] = r(C, C)
        P_["cls.predictions.transform.dense.bias"] = r(C, std=0.1)
        P_["cls.predictions.transform.LayerNorm.weight"], P_["cls.predictions.transform.LayerNorm.bias"] = ln()
        P_["cls.predictions.bias"] = r(V, std=0.1)

    def conv1d(self, h, stem):
        """kiln's fused [in, out] matrix of a linear, which sigma-reparam normalizes as one."""
        p = self.p
        if stem == "attn.c_attn":
            return torch.cat([p[h + f"attention.self.{k}.weight"].t() for k in ("query", "key", "value")], dim=1)
        hf = {"attn.c_proj": "attention.output.dense", "mlp.c_fc": "intermediate.dense",
              "mlp.c_proj": "output.dense"}[stem]
        return p[h + hf + ".weight"].t()

    def linear(self, h, stem, x):
        """x [.., in] through one of kiln's linears, q, k and v fused: [.., out]."""
        W = self.conv1d(h, stem)
        if self.o.get("sigma_reparam"):
            u, v = self.buffers_[h + "kiln." + stem + ".sigma_u"], self.buffers_[h + "kiln." + stem + ".sigma_v"]
            W = W * (self.p[h + "kiln." + stem + ".sigma_gamma"] / (u @ W @ v))
        p = self.p
        if stem == "attn.c_attn":
            b = torch.cat([p[h + f"attention.self.{k}.bias"] for k in ("query", "key", "value")])
        else:
            b = p[h + {"attn.c_proj": "attention.output.dense", "mlp.c_fc": "intermediate.dense",
                       "mlp.c_proj": "output.dense"}[stem] + ".bias"]
        return x @ W + b

    def ln(self, name, x):
        return F.layer_norm(x, (C,), self.p[name + ".weight"], self.p[name + ".bias"], EPS)

    def sublayer(self, h, ln_name, x, f):
        norm, res = self.o.get("norm", "post"), self.o.get("residual", "plain")
        skip = x * (2 * L) ** 0.25 if res == "deepnorm" else x
        if norm == "pre":
            return skip + f(self.ln(h + ln_name, x))
        return self.ln(h + ln_name, skip + f(x))

    def __call__(self, ids, lengths, targets):
        p = self.p
        B, T = ids.shape
        x = (p["bert.embeddings.word_embeddings.weight"][ids] + p["bert.embeddings.position_embeddings.weight"][:T]
             + p["bert.embeddings.token_type_embeddings.weight"][0])
        x = self.ln("bert.embeddings.LayerNorm", x)
        key_ok = (torch.arange(T).view(1, T) < lengths.view(B, 1)).view(B, 1, 1, T)
        d = C // H
        for l in range(L):
            h = f"bert.encoder.layer.{l}."

            def attention(t):
                q, k, v = (z.view(B, T, H, d).transpose(1, 2) for z in self.linear(h, "attn.c_attn", t).split(C, 2))
                s = (q @ k.transpose(-2, -1) / math.sqrt(d)).masked_fill(~key_ok, float("-inf"))
                a = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
                return self.linear(h, "attn.c_proj", a)

            def mlp(t):
                return self.linear(h, "mlp.c_proj", F.gelu(self.linear(h, "mlp.c_fc", t), approximate="tanh"))

            x = self.sublayer(h, "attention.output.LayerNorm", x, attention)
            x = self.sublayer(h, "output.LayerNorm", x, mlp)
        if "bert.encoder.kiln.ln_f.weight" in p:
            x = self.ln("bert.encoder.kiln.ln_f", x)
        t = F.gelu(x @ p["cls.predictions.transform.dense.weight"].t() + p["cls.predictions.transform.dense.bias"],
                   approximate="tanh")
        t = self.ln("cls.predictions.transform.LayerNorm", t)
        logits = t @ p["bert.embeddings.word_embeddings.weight"].t() + p["cls.predictions.bias"]
        loss = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), ignore_index=-1)
        return logits, loss

    def save(self, path):
        o = self.o
        meta = {"format": "pt", "model_type": "bert", "vocab_size": str(V), "hidden_size": str(C),
                "num_hidden_layers": str(L), "num_attention_heads": str(H), "intermediate_size": str(4 * C),
                "max_position_embeddings": str(P), "type_vocab_size": "2", "layer_norm_eps": str(EPS),
                "hidden_act": "gelu_new", "kiln.norm": o.get("norm", "post"),
                "kiln.residual": o.get("residual", "plain"),
                "kiln.sigma_reparam": "1" if o.get("sigma_reparam") else "0"}
        tensors = {k: v.detach().numpy() for k, v in self.p.items()}
        tensors.update({k: v.numpy() for k, v in self.buffers_.items()})
        # Hugging Face stores the tied decoder too: kiln must accept and ignore it
        tensors["cls.predictions.decoder.weight"] = tensors["bert.embeddings.word_embeddings.weight"]
        save_safetensors(path, tensors, meta)

    def optimizer(self):
        """AdamW with kiln's decay roles: matrices and embeddings decay, the rest does not."""
        return kiln_adamw(self.p, LR, (0.9, 0.99))


CONFIGS = [
    ("post_ln", {"norm": "post"}),
    ("pre_ln", {"norm": "pre"}),
    ("pre_ln_sigma_reparam", {"norm": "pre", "sigma_reparam": 1}),
    ("deepnorm", {"norm": "post", "residual": "deepnorm"}),
]


def make_batch(seed):
    """Rows of different lengths, junk ids in the padding, two or three targets per row."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, V, (ROWS, WIDTH), generator=g)
    lengths = torch.tensor(LENGTHS)
    targets = torch.full((ROWS, WIDTH), -1, dtype=torch.long)
    for b, n in enumerate(LENGTHS):
        for j in torch.randperm(n - 2, generator=g)[: max(1, (n - 2) // 2)]:
            targets[b, 1 + j] = int(torch.randint(0, V, (1,), generator=g))
    return ids, lengths, targets


def run_config(args, name, o, seed):
    model = Reference(o, seed)
    weights = os.path.join(args.workdir, f"{name}.safetensors")
    batch_path = os.path.join(args.workdir, f"{name}_batch.safetensors")
    result = os.path.join(args.workdir, f"{name}_kiln.safetensors")
    model.save(weights)
    ids, lengths, targets = make_batch(seed + 100)
    save_safetensors(batch_path, {"ids": ids.numpy().astype(np.int64), "lengths": lengths.numpy().astype(np.int64),
                                  "targets": targets.numpy().astype(np.int64)})
    if not kiln_dev(args, name, "bert-parity", "--ckpt", weights, "--batch", batch_path, "--out", result,
                    "--steps", str(STEPS), "--lr", str(LR)):
        return
    got, _ = load_safetensors(result)
    logits, loss = model(ids, lengths, targets)
    loss.backward()
    e = rel_err(got["logits"], logits.detach().numpy())
    check(f"{name}: logits at every position", e < 1e-5, f"relative error {e:.2e}")
    e = rel_err(got["loss"], [loss.item()])
    check(f"{name}: MLM loss", e < 1e-6, f"relative error {e:.2e}")
    worst, worst_name, missing = 0.0, "", [n for n in model.p if "grad." + n not in got]
    check(f"{name}: a gradient for every weight", not missing, f"missing {missing[:3]}")
    # the key bias's gradient is zero in exact arithmetic (q . b_k is the same for every key
    # of a query, and softmax ignores it): both sides hold rounding noise there, so each
    # error is relative to the larger of the tensor's norm and 1e-3 of the whole gradient's
    total = math.sqrt(sum(float((p.grad.double() ** 2).sum()) for p in model.p.values()))
    for n, p in model.p.items():
        if n in missing:
            continue
        want = p.grad.numpy().astype(np.float64)
        diff = np.asarray(got["grad." + n], np.float64) - want
        e = float(np.sqrt(np.sum(diff ** 2))) / max(float(np.sqrt(np.sum(want ** 2))), 1e-3 * total)
        e = e if np.all(np.isfinite(diff)) else float("inf")
        if e > worst:
            worst, worst_name = e, n
    check(f"{name}: gradients of all {len(model.p)} weights", worst < 1e-4, f"worst {worst:.2e} ({worst_name})")
    losses = adamw_losses(model, STEPS, lambda _: model(ids, lengths, targets)[1])
    check_losses(f"{name}: ", got, losses)


if __name__ == "__main__":
    run_configs(CONFIGS, run_config, 40, "BERT matches PyTorch")
