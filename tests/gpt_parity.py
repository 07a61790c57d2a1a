#!/usr/bin/python3
"""Whole-model parity of kiln's GPT with PyTorch, and checkpoint interop both ways.

  gpt_parity.py --kiln PATH/kiln --workdir DIR [--backend cpu|vulkan|opencl]

1. From the same random weights (written here as a GPT-2 layout safetensors) and tokens,
   `kiln dev parity` must give PyTorch's logits, loss and the gradient of every weight, and
   the losses of 10 AdamW steps (weight decay, clipping) must match PyTorch's.
2. A checkpoint written by `kiln train` loads by name (strict) into the PyTorch GPT-2 and
   gives the loss `kiln eval` prints.
3. A checkpoint PyTorch writes in Hugging Face's own style (a `transformer.` prefix, the
   attn.bias / attn.masked_bias buffers, a tied lm_head.weight, the config in config.json)
   is read by `kiln eval`, which must print PyTorch's loss to 1e-4 relative.

The reference files are written into DIR at test time. Exit 0: pass, 1: fail, 77: skipped
(no torch here, or the backend is not available on this machine).
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "samples"))
# parity_checks first: it exits 77 (skipped) where torch or numpy is missing
from parity_checks import check, failures, parity_args, rel_err  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from nanogpt_torch import GPT, adamw, load_safetensors, save_safetensors, window_loss  # noqa: E402

CFG = {"n_layer": 2, "n_head": 3, "n_embd": 48, "n_positions": 40, "vocab_size": 256,
       "layer_norm_epsilon": 1e-5}
BATCH, T, BATCHES, STEPS = 3, 33, 2, 10  # T < n_positions and odd on purpose
ADAM = {"lr": 3e-3, "beta1": 0.9, "beta2": 0.95, "weight_decay": 0.1, "clip": 0.5}

def kiln(args, *cmd):
    """Runs kiln; returns stdout. Exits 77 when the backend is unavailable."""
    r = subprocess.run([args.kiln, *cmd], capture_output=True, text=True)
    if r.returncode == 77:
        print(f"skipped: {r.stderr.strip()}")
        sys.exit(77)
    if r.returncode != 0:
        print(f"FAIL: kiln {' '.join(cmd)}\n{r.stderr}")
        sys.exit(1)
    return r.stdout


def random_model(seed):
    """Random weights with non-trivial LayerNorms and biases, so their gradients count."""
    torch.manual_seed(seed)
    model = GPT(CFG)
    model.init_weights()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.add_(0.1 * torch.randn_like(p))
    return model


def test_training_parity(args, work):
    model = random_model(1)
    weights = os.path.join(work, "parity_weights.safetensors")
    tokens_path = os.path.join(work, "parity_tokens.safetensors")
    result = os.path.join(work, "parity_kiln.safetensors")
    model.save(weights)
    g = torch.Generator().manual_seed(2)
    tokens = torch.randint(0, CFG["vocab_size"], (BATCHES, BATCH, T + 1), generator=g)
    save_safetensors(tokens_path, {"tokens": tokens.numpy().astype(np.int64)})
    kiln(args, "dev", "parity", "--ckpt", weights, "--tokens", tokens_path, "--out", result,
         "--steps", str(STEPS), "--lr", str(ADAM["lr"]), "--beta1", str(ADAM["beta1"]),
         "--beta2", str(ADAM["beta2"]), "--weight-decay", str(ADAM["weight_decay"]),
         "--clip", str(ADAM["clip"]), "--backend", args.backend)
    got, _ = load_safetensors(result)

    x, y = tokens[0, :, :-1], tokens[0, :, 1:]
    logits, loss = model(x, y)
    loss.backward()
    check("logits", rel_err(got["logits"], logits.detach().numpy()) < 1e-5,
          f"relative error {rel_err(got['logits'], logits.detach().numpy()):.2e}")
    check("loss", abs(got["loss"][0] - loss.item()) < 1e-5 * abs(loss.item()),
          f"kiln {got['loss'][0]:.7f} torch {loss.item():.7f}")
    worst, worst_name = 0.0, ""
    for name, p in model.named_parameters():
        e = rel_err(got["grad." + name], p.grad.numpy())
        if e > worst:
            worst, worst_name = e, name
    check(f"gradients of all {len(list(model.parameters()))} weights", worst < 1e-4,
          f"worst relative error {worst:.2e} ({worst_name})")

    opt = adamw(model, ADAM["lr"], ADAM["beta1"], ADAM["beta2"], ADAM["weight_decay"])
    losses = []
    for step in range(STEPS):
        x, y = tokens[step % BATCHES, :, :-1], tokens[step % BATCHES, :, 1:]
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), ADAM["clip"])
        opt.step()
        losses.append(loss.item())
    e = rel_err(got["losses"], losses)
    check(f"losses of {STEPS} AdamW steps", e < 1e-4,
          f"relative error {e:.2e}; kiln {got['losses'][-1]:.6f} torch {losses[-1]:.6f} at the last")


def sample_text(path, size=6000):
    """Deterministic English-like text (every byte value kiln sees is a token)."""
    words = ("the quick brown fox jumps over a lazy dog while kiln trains small models on "
             "plain bytes and pytorch checks every number it prints").split()
    rng = np.random.default_rng(3)
    out = []
    while sum(len(w) + 1 for w in out) < size:
        out.append(words[rng.integers(len(words))])
    with open(path, "w") as f:
        f.write(" ".join(out))
    with open(path, "rb") as f:
        return torch.tensor(np.frombuffer(f.read(), dtype=np.uint8).astype(np.int64))


def test_kiln_checkpoint_in_torch(args, work, text_path, text):
    out = os.path.join(work, "kiln_run")
    kiln(args, "train", "--data", text_path, "--out", out, "--backend", args.backend,
         "--layers", "2", "--heads", "2", "--dim", "32", "--block", "24", "--batch", "4",
         "--steps", "6", "--warmup", "2", "--eval-every", "0", "--seed", "5")
    ckpt = os.path.join(out, "model.safetensors")
    tensors, meta = load_safetensors(ckpt)
    cfg = {k: int(meta[k]) for k in ("n_layer", "n_head", "n_embd", "n_positions", "vocab_size")}
    cfg["layer_norm_epsilon"] = float(meta["layer_norm_epsilon"])
    model = GPT(cfg)
    model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in tensors.items()}, strict=True)
    torch_loss = window_loss(model, text, cfg["n_positions"])
    kiln_loss = float(kiln(args, "eval", "--ckpt", ckpt, "--data", text_path,
                           "--backend", args.backend).split()[1])
    check("kiln checkpoint in PyTorch (strict load by name)",
          abs(kiln_loss - torch_loss) < 1e-4 * torch_loss,
          f"kiln eval {kiln_loss:.6f}, PyTorch {torch_loss:.6f}")


def test_torch_checkpoint_in_kiln(args, work, text_path, text):
    model = random_model(4)
    d = os.path.join(work, "hf_style")
    os.makedirs(d, exist_ok=True)
    tensors = {"transformer." + k: v.detach().numpy() for k, v in model.state_dict().items()}
    T_ = CFG["n_positions"]
    for i in range(CFG["n_layer"]):  # the buffers Hugging Face's GPT2Model saves
        tensors[f"transformer.h.{i}.attn.bias"] = np.tril(np.ones((1, 1, T_, T_), np.float32))
        tensors[f"transformer.h.{i}.attn.masked_bias"] = np.array(-1e4, np.float32)
    tensors["lm_head.weight"] = tensors["transformer.wte.weight"]
    save_safetensors(os.path.join(d, "model.safetensors"), tensors, {"format": "pt"})
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write('{"model_type": "gpt2", "activation_function": "gelu_new", "n_layer": %d, '
                '"n_head": %d, "n_embd": %d, "n_positions": %d, "vocab_size": %d, '
                '"layer_norm_epsilon": 1e-05}' % (CFG["n_layer"], CFG["n_head"], CFG["n_embd"],
                                                 CFG["n_positions"], CFG["vocab_size"]))
    torch_loss = window_loss(model, text, T_)
    kiln_loss = float(kiln(args, "eval", "--ckpt", os.path.join(d, "model.safetensors"),
                           "--data", text_path, "--backend", args.backend).split()[1])
    check("PyTorch (Hugging Face style) checkpoint in kiln eval",
          abs(kiln_loss - torch_loss) < 1e-4 * torch_loss,
          f"kiln eval {kiln_loss:.6f}, PyTorch {torch_loss:.6f}")


def main():
    args = parity_args()
    test_training_parity(args, args.workdir)
    text_path = os.path.join(args.workdir, "text.txt")
    text = sample_text(text_path)
    test_kiln_checkpoint_in_torch(args, args.workdir, text_path, text)
    test_torch_checkpoint_in_kiln(args, args.workdir, text_path, text)
    if failures:
        print(f"{len(failures)} check(s) failed: {', '.join(failures)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
