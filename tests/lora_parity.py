#!/usr/bin/python3
"""kiln's LoRA against PyTorch: PEFT's LoRA (h = W x + alpha/r B A x, dropout off) written by
hand in tests/lora_reference.py, on the float64 references of GPT-2 and the Llama family.

  lora_parity.py --kiln PATH/kiln --workdir DIR [--backend cpu|vulkan|opencl]

1. The replay: `kiln dev parity --lora-rank R --lora-alpha A [--lora-targets LIST]` puts a
   fresh adapter on the base, dumps it ("init.<name>"), the logits, loss and the adapter's
   gradients of batch 0, trains it 30 AdamW steps (weight decay, clipping) with the base
   frozen, and dumps the losses and the adapter after ("final.<name>"). The reference starts
   from the same A and B and replays AdamW on the adapter alone in float64: logits to 1e-5,
   gradients, losses and the final A and B to 1e-4 (relative, as gpt_parity.py). The fresh
   adapter is PEFT's init: B zeros, A uniform within +-1/sqrt(in), on the modules PEFT's
   suffix matching selects.
2. PyTorch agrees: an adapter `kiln train --init BASE --lora-rank R` trained a few steps (B
   no longer zero) is read from its PEFT files by the reference and put on the base; the
   logits `kiln dev parity --lora DIR` prints must be the reference's to 1e-5 (and differ
   from the base's own), and the gradients of A and B (both non-zero now) to 1e-4.
GPT-2 (Conv1D, fan_in_fan_out) and Llama-family bases (q/k/v and gate/up: column ranges of
kiln's fused matrices). Exit 0: pass, 1: fail, 77: skipped.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "samples"))
# parity_checks first: it exits 77 (skipped) where torch or numpy is missing
from parity_checks import check, finish, kiln_adamw, kiln_dev, kiln_ok, parity_args, rel_err  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

import lora_bases  # noqa: E402
import lora_reference  # noqa: E402
from nanogpt_torch import load_safetensors, save_safetensors  # noqa: E402

BATCH, T, STEPS, LR, CLIP = 2, 12, 30, 3e-3, 0.5
LLAMA = {"heads": 4, "kv_heads": 2, "untied": 1}
QWEN2 = {"heads": 4, "kv_heads": 1, "bias": "qkv", "rope_base": 1e6}

# name, base, rank, alpha, --lora-targets (None: the default, every linear of the blocks)
REPLAYS = [
    ("gpt2_every_linear", lambda w: lora_bases.gpt2_base(w, 21), 4, 8, None),
    ("gpt2_c_attn_c_proj", lambda w: lora_bases.gpt2_base(w, 22), 2, 5, ["c_attn", "c_proj"]),
    ("llama_qkv_gate_up", lambda w: lora_bases.llama_base(w, 23, LLAMA), 4, 16,
     ["q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"]),
    ("qwen2_every_linear", lambda w: lora_bases.llama_base(w, 24, QWEN2), 3, 6, None),
]
AGREES = [
    ("gpt2_trained", lambda w: lora_bases.gpt2_base(w, 31), 4, 8, ["c_attn", "mlp.c_proj"]),
    ("llama_trained", lambda w: lora_bases.llama_base(w, 32, LLAMA), 4, 8,
     ["q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"]),
]


def tokens_file(args, name, seed, batches):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, lora_bases.VOCAB, (batches, BATCH, T + 1), generator=g)
    path = os.path.join(args.workdir, f"{name}_tokens.safetensors")
    save_safetensors(path, {"tokens": tokens.numpy().astype(np.int64)})
    return tokens, path


def module_of(family, spec):
    """kiln's adapter name "h.N.<module>.lora_A" as (PEFT's full module name, "A")."""
    head, which = spec.rsplit(".lora_", 1)
    layer, module = head[len("h."):].split(".", 1)
    return f"{lora_reference.BLOCKS[family]}{layer}.{module}", which


def adapter_of(got, prefix, family):
    """{module: (A, B)} from the dump's tensors named prefix + kiln's adapter names."""
    pairs = {}
    for name, value in got.items():
        if name.startswith(prefix):
            module, which = module_of(family, name[len(prefix):])
            pairs.setdefault(module, {})[which] = torch.from_numpy(value.astype(np.float64))
    return {m: (ab["A"], ab["B"]) for m, ab in pairs.items()}


def check_init(name, base, adapter, targets):
    """PEFT's init on PEFT's selection: B zeros, A uniform in +-1/sqrt(in) (kaiming_uniform_
    with a = sqrt(5)), its spread that of the uniform law."""
    want = {m for m in lora_reference.linear_modules(base.family, base.n_layer)
            if lora_reference.peft_selects(targets or "all-linear", m)}
    check(f"{name}: adapted modules as PEFT's suffix matching", set(adapter) == want,
          f"{len(adapter)} modules" if set(adapter) == want else f"differ: {sorted(set(adapter) ^ want)}")
    worst_b = max(float(b.abs().max()) for _, b in adapter.values())
    outside, spread = 0.0, []
    for a, _ in adapter.values():
        bound = 1 / math.sqrt(a.shape[1])
        outside = max(outside, float(a.abs().max()) / bound)
        spread.append(float(a.std()) / (bound / math.sqrt(3)))
    ok = worst_b == 0 and outside <= 1 and 0.7 < float(np.mean(spread)) < 1.3
    check(f"{name}: PEFT's init", ok, f"max |B| {worst_b}, max |A| {outside:.3f} of the bound, "
          f"std {np.mean(spread):.3f} of the uniform law's")


def dev_lora_parity(args, name, base, tokens_path, rank, alpha, targets):
    """`kiln dev parity` of a fresh adapter on base: the dump, or None."""
    out = os.path.join(args.workdir, f"{name}_kiln.safetensors")
    argv = ["--ckpt", base.path, "--tokens", tokens_path, "--out", out, "--steps", str(STEPS), "--lr", str(LR),
            "--beta1", "0.9", "--beta2", "0.95", "--weight-decay", "0.1", "--clip", str(CLIP),
            "--lora-rank", str(rank), "--lora-alpha", str(alpha)]
    if targets:
        argv += ["--lora-targets", ",".join(targets)]
    return load_safetensors(out)[0] if kiln_dev(args, name, "parity", *argv) else None


def worst(got, prefix, family, params, of):
    """The worst relative error of got[prefix + kiln name] against of(parameter), over every
    adapted module (inf where the dump lacks one)."""
    specs = [n[len(prefix):] for n in got if n.startswith(prefix)]
    if {module_of(family, spec) for spec in specs} != {(m, w) for m in params for w in "AB"}:
        return float("inf"), f"the dump's {prefix}* names are not the adapter's"
    e, at = 0.0, ""
    for spec in specs:
        module, which = module_of(family, spec)
        err = rel_err(got[prefix + spec], of(params[module][0 if which == "A" else 1]))
        if err >= e:
            e, at = err, spec
    return e, at


def replay(args, name, make_base, rank, alpha, targets, seed):
    base = make_base(args.workdir)
    tokens, tokens_path = tokens_file(args, name, seed, 2)
    got = dev_lora_parity(args, name, base, tokens_path, rank, alpha, targets)
    if got is None:
        return
    adapter = adapter_of(got, "init.", base.family)
    check_init(name, base, adapter, targets)
    params = base.adapt(adapter, alpha / rank)
    logits, loss = base.model(tokens[0, :, :-1], tokens[0, :, 1:])
    loss.backward()
    check(f"{name}: logits", rel_err(got["logits"], logits.detach().numpy()) < 1e-5,
          f"relative error {rel_err(got['logits'], logits.detach().numpy()):.2e}")
    check(f"{name}: loss", abs(got["loss"][0] - loss.item()) < 1e-5 * loss.item(),
          f"kiln {got['loss'][0]:.7f} torch {loss.item():.7f}")
    e, at = worst(got, "grad.", base.family, params, lambda p: p.grad.numpy())
    check(f"{name}: gradients of the adapter's {2 * len(params)} matrices", e < 1e-4, f"worst {e:.2e} ({at})")
    flat = {f"{m}.{w}": p for m, ab in params.items() for w, p in zip("AB", ab)}
    opt = kiln_adamw(flat, LR, (0.9, 0.95), lambda n, p: True)  # A and B decay (the contract)
    losses = []
    for step in range(STEPS):
        _, loss = base.model(tokens[step % 2, :, :-1], tokens[step % 2, :, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(flat.values()), CLIP)
        opt.step()
        losses.append(loss.item())
    e = rel_err(got["losses"], losses)
    check(f"{name}: losses of {STEPS} AdamW steps on the adapter", e < 1e-4,
          f"relative error {e:.2e}; kiln {got['losses'][-1]:.6f} torch {losses[-1]:.6f} at the last")
    e, at = worst(got, "final.", base.family, params, lambda p: p.detach().numpy())
    check(f"{name}: A and B after {STEPS} steps", e < 1e-4, f"worst relative error {e:.2e} ({at})")


def agrees(args, name, make_base, rank, alpha, targets, seed, text):
    """kiln's logits with a trained adapter read from its PEFT files, against the reference's."""
    base = make_base(args.workdir)
    folder = os.path.join(args.workdir, name)
    if kiln_ok(args, f"{name}: kiln train", "train", "--init", base.path, "--data", text, "--out", folder,
               "--lora-rank", str(rank), "--lora-alpha", str(alpha), "--lora-targets", ",".join(targets),
               "--block", "16", "--batch", "4", "--steps", "8", "--lr", "1e-2", "--warmup", "0",
               "--eval-every", "0", "--seed", str(seed), "--backend", args.backend) is None:
        return
    tokens, tokens_path = tokens_file(args, name, seed, 1)
    out = os.path.join(args.workdir, f"{name}_kiln.safetensors")
    if not kiln_dev(args, name, "parity", "--ckpt", base.path, "--lora", folder, "--tokens", tokens_path,
                    "--out", out, "--steps", "0"):
        return
    got, _ = load_safetensors(out)
    config, adapter = lora_reference.read_adapter(folder)
    x, y = tokens[0, :, :-1], tokens[0, :, 1:]
    with torch.no_grad():
        plain = base.model(x, y)[0].numpy()
    params = base.adapt(adapter, lora_reference.scaling(config))
    logits, loss = base.model(x, y)
    loss.backward()
    logits = logits.detach().numpy()
    b = max(float(b.abs().max()) for _, b in adapter.values())
    moved = rel_err(logits, plain)
    check(f"{name}: the trained adapter changes the logits", b > 0 and moved > 1e-3,
          f"max |B| {b:.3g}, the logits move {moved:.2e} from the base's")
    e, at = worst(got, "init.", base.family, params, lambda p: p.detach().numpy())
    check(f"{name}: kiln reads the PEFT files' A and B", e == 0, f"worst relative error {e:.2e} ({at})")
    e = rel_err(got["logits"], logits)
    check(f"{name}: kiln's logits with the PEFT files = PyTorch's", e < 1e-5,
          f"relative error {e:.2e}, max abs difference {float(np.abs(got['logits'] - logits).max()):.2e}")
    e, at = worst(got, "grad.", base.family, params, lambda p: p.grad.numpy())
    check(f"{name}: gradients of the trained A and B", e < 1e-4, f"worst {e:.2e} ({at})")

def main():
    args = parity_args()
    for i, (name, make_base, rank, alpha, targets) in enumerate(REPLAYS):
        replay(args, name, make_base, rank, alpha, targets, 40 + i)
    text = lora_bases.train_text(os.path.join(args.workdir, "text.txt"))
    for i, (name, make_base, rank, alpha, targets) in enumerate(AGREES):
        agrees(args, name, make_base, rank, alpha, targets, 50 + i, text)
    finish("kiln's LoRA matches PEFT's, replayed in PyTorch (float64)")


if __name__ == "__main__":
    main()
