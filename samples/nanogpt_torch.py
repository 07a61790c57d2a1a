#!/usr/bin/python3
"""The same byte-level GPT and training recipe as `kiln train`, in PyTorch: the comparison
kiln's results are measured against (docs/results.md), and the PyTorch half of
`kiln bench train` and of the parity test (tests/gpt_parity.py imports GPT and the
safetensors helpers from here).

  nanogpt_torch.py --data FILE [--out DIR] [kiln train's options]
        trains like `kiln train` (GPT-2 architecture, AdamW with warmup and cosine decay,
        decay on 2-D weights, clipping, last 10% held out) and prints `val loss X`; with
        --out it writes DIR/model.safetensors in kiln's (Hugging Face GPT-2) layout, which
        `kiln eval` and `kiln decode` read.
  nanogpt_torch.py --bench [options]
        times training steps on random bytes and prints `tokens_per_s X`.
  nanogpt_torch.py ... --device cuda
        trains or times on that torch device (default cpu): scripts/gpu/run.sh measures
        PyTorch on CUDA (eager) beside kiln on the GPU this way. Batches and the init come
        from the CPU's RNG either way, so only the arithmetic moves.
  nanogpt_torch.py --bench --ranks N [options]
        the same with N processes under DistributedDataParallel (gloo, one thread each,
        --batch per process): the peer of kiln's data parallelism (scripts/bench_parallel.sh);
        prints `tokens_per_s X` over all ranks.

Batches come from torch's RNG rather than kiln's counter RNG, so the two runs see
different (equally random) batches; everything else is the same recipe.
Needs Debian's /usr/bin/python3 (python3-torch, python3-numpy).
"""
import argparse
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

# ---- safetensors, by hand (the `safetensors` package is not installed on Debian) ----

_ST_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64,
              "I32": np.int32, "U8": np.uint8}


def save_safetensors(path, tensors, metadata=None):
    """Writes {name: numpy array} (and string metadata) as a safetensors file."""
    header = {}
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    blobs, offset = [], 0
    for name, array in tensors.items():
        array = np.ascontiguousarray(array)
        dtype = next(k for k, v in _ST_DTYPES.items() if array.dtype == v)
        raw = array.astype(array.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)
    os.replace(tmp, path)


def load_safetensors(path):
    """Returns ({name: numpy array}, metadata dict)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    metadata = header.pop("__metadata__", {})
    base = 8 + n
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        dtype = np.dtype(_ST_DTYPES[info["dtype"]]).newbyteorder("<")
        tensors[name] = np.frombuffer(data[base + begin:base + end], dtype=dtype).reshape(info["shape"])
    return tensors, metadata


# ---- the model: GPT-2's architecture with Hugging Face's names and Conv1D layout ----

class Conv1D(nn.Module):
    """y = x W + b with W [in, out], as GPT-2's (the transpose of nn.Linear's layout)."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return x @ self.weight + self.bias


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_head = cfg["n_head"]
        self.c_attn = Conv1D(cfg["n_embd"], 3 * cfg["n_embd"])
        self.c_proj = Conv1D(cfg["n_embd"], cfg["n_embd"])

    def forward(self, x, dropout):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // self.n_head)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        att = F.dropout(att, dropout, self.training)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c_fc = Conv1D(cfg["n_embd"], 4 * cfg["n_embd"])
        self.c_proj = Conv1D(4 * cfg["n_embd"], cfg["n_embd"])

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        eps = cfg.get("layer_norm_epsilon", 1e-5)
        self.ln_1 = nn.LayerNorm(cfg["n_embd"], eps=eps)
        self.attn = Attention(cfg)
        self.ln_2 = nn.LayerNorm(cfg["n_embd"], eps=eps)
        self.mlp = MLP(cfg)

    def forward(self, x, dropout):
        x = x + F.dropout(self.attn(self.ln_1(x), dropout), dropout, self.training)
        return x + F.dropout(self.mlp(self.ln_2(x)), dropout, self.training)


class GPT(nn.Module):
    """state_dict() names are kiln's checkpoint names (wte.weight, h.0.ln_1.weight, ...)."""

    def __init__(self, cfg, dropout=0.0):
        super().__init__()
        self.cfg = dict(cfg)
        self.dropout = dropout
        self.wte = nn.Embedding(cfg["vocab_size"], cfg["n_embd"])
        self.wpe = nn.Embedding(cfg["n_positions"], cfg["n_embd"])
        self.h = nn.ModuleList(Block(cfg) for _ in range(cfg["n_layer"]))
        self.ln_f = nn.LayerNorm(cfg["n_embd"], eps=cfg.get("layer_norm_epsilon", 1e-5))

    def init_weights(self):
        """GPT-2 / nanoGPT: normal(0, 0.02), residual projections / sqrt(2 n_layer)."""
        proj_std = 0.02 / math.sqrt(2 * self.cfg["n_layer"])
        for name, p in self.named_parameters():
            if p.dim() == 2:
                nn.init.normal_(p, 0.0, proj_std if name.endswith("c_proj.weight") else 0.02)
            elif "ln_" in name and name.endswith("weight"):
                nn.init.ones_(p)
            else:
                nn.init.zeros_(p)

    def forward(self, ids, targets=None):
        T = ids.shape[1]
        x = self.wte(ids) + self.wpe(torch.arange(T, device=ids.device))
        x = F.dropout(x, self.dropout, self.training)
        for block in self.h:
            x = block(x, self.dropout)
        logits = self.ln_f(x) @ self.wte.weight.t()  # the output head is tied to wte
        if targets is None:
            return logits
        return logits, F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    def config_metadata(self):
        meta = {k: str(self.cfg[k]) for k in ("n_layer", "n_head", "n_embd", "n_positions", "vocab_size")}
        meta["layer_norm_epsilon"] = str(self.cfg.get("layer_norm_epsilon", 1e-5))
        meta["format"] = "pt"
        return meta

    def save(self, path):
        tensors = {k: v.detach().cpu().numpy() for k, v in self.state_dict().items()}
        save_safetensors(path, tensors, self.config_metadata())


def adamw(model, lr, beta1, beta2, weight_decay):
    """AdamW with weight decay on 2-D weights only (matrices and embeddings)."""
    params = list(model.parameters())
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=(beta1, beta2), eps=1e-8)


def lr_at(step, args):
    """kiln's schedule (host/model/trainer.c): linear warmup, then cosine down to min_lr."""
    if step < args.warmup:
        return args.lr * (step + 1) / (args.warmup + 1)
    if step >= args.steps or args.steps <= args.warmup:
        return args.min_lr
    ratio = (step - args.warmup) / (args.steps - args.warmup)
    return args.min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (args.lr - args.min_lr)


def train_step(model, opt, x, y, lr, clip):
    for g in opt.param_groups:
        g["lr"] = lr
    _, loss = model(x, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if clip > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    opt.step()
    return loss.item()


def batch_at(data, ix, block, device):
    """The inputs and targets of the windows starting at ix, on device."""
    x = torch.stack([data[i:i + block] for i in ix])
    y = torch.stack([data[i + 1:i + 1 + block] for i in ix])
    return x.to(device), y.to(device)


def median(values):
    values = sorted(values)
    n = len(values)
    return values[n // 2] if n % 2 else 0.5 * (values[n // 2 - 1] + values[n // 2])


@torch.no_grad()
def window_loss(model, tokens, block, batch=64):
    """Mean cross-entropy over consecutive non-overlapping windows, as `kiln eval`."""
    model.eval()
    count = (len(tokens) - 1) // block
    total = 0.0
    for first in range(0, count, batch):
        rows = range(first, min(first + batch, count))
        x, y = batch_at(tokens, [i * block for i in rows], block, model.wte.weight.device)
        total += model(x, y)[1].item() * len(rows)
    model.train()
    return total / count


def config_of(args):
    return {"n_layer": args.layers, "n_head": args.heads, "n_embd": args.dim,
            "n_positions": args.block, "vocab_size": 256, "layer_norm_epsilon": 1e-5}


def run_training(args):
    with open(args.data, "rb") as f:
        data = torch.tensor(np.frombuffer(f.read(), dtype=np.uint8).astype(np.int64))
    n_train = len(data) - len(data) // 10
    train, val = data[:n_train], data[n_train:]
    torch.manual_seed(args.seed)
    model = GPT(config_of(args), args.dropout)
    model.init_weights()
    model.to(args.device)
    opt = adamw(model, args.lr, args.beta1, args.beta2, args.weight_decay)
    print(f"torch {torch.__version__}, {device_name(args)}; "
          f"{sum(p.numel() for p in model.parameters()) / 1e6:.2f}M weights", file=sys.stderr)
    start = time.time()
    step_rates = []
    for step in range(args.steps):
        step_start = time.time()
        ix = torch.randint(len(train) - args.block, (args.batch,))
        x, y = batch_at(train, ix, args.block, args.device)
        loss = train_step(model, opt, x, y, lr_at(step, args), args.clip)  # .item() waits for the device
        if step >= args.warmup_steps:
            step_rates.append(args.batch * args.block / (time.time() - step_start))
        if (step + 1) % args.log_every == 0 or step + 1 == args.steps:
            print(f"step {step + 1}/{args.steps}  loss {loss:.4f}  {time.time() - start:.1f} s",
                  file=sys.stderr)
    train_secs = time.time() - start
    val_loss = window_loss(model, val, args.block)
    print(f"train time {train_secs:.1f} s, total {time.time() - start:.1f} s", file=sys.stderr)
    if step_rates:  # the median step after --warmup-steps, as kiln's per-step tokens/s
        print(f"tokens_per_s {median(step_rates):.1f}")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        model.save(os.path.join(args.out, "model.safetensors"))
    print(f"val loss {val_loss:.4f}")


def run_bench(args):
    torch.manual_seed(args.seed)
    data = torch.randint(256, (1 << 20,))
    model = GPT(config_of(args), args.dropout)
    model.init_weights()
    model.to(args.device)
    opt = adamw(model, args.lr, args.beta1, args.beta2, args.weight_decay)
    for step in range(args.warmup_steps + args.steps_timed):
        if step == args.warmup_steps:
            start = time.time()
        ix = torch.randint(len(data) - args.block, (args.batch,))
        x, y = batch_at(data, ix, args.block, args.device)
        train_step(model, opt, x, y, args.lr, args.clip)
    secs = time.time() - start
    print(f"torch {torch.__version__}, {device_name(args)}")
    print(f"tokens_per_s {args.steps_timed * args.batch * args.block / secs:.1f}")


def device_name(args):
    if args.device == "cpu":
        return f"cpu, {torch.get_num_threads()} threads"
    return f"{args.device} ({torch.cuda.get_device_name(args.device)})" if args.device.startswith("cuda") else args.device


def _ddp_worker(rank, args, rendezvous):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    torch.set_num_threads(args.threads or 1)
    dist.init_process_group("gloo", init_method="file://" + rendezvous, rank=rank, world_size=args.ranks)
    torch.manual_seed(args.seed)  # the same initial weights on every rank (DDP checks them too)
    model = GPT(config_of(args), args.dropout)
    model.init_weights()
    ddp = DistributedDataParallel(model, bucket_cap_mb=args.bucket_mb)
    opt = adamw(model, args.lr, args.beta1, args.beta2, args.weight_decay)
    data = torch.randint(256, (1 << 20,), generator=torch.Generator().manual_seed(args.seed + 1 + rank))
    for step in range(args.warmup_steps + args.steps_timed):
        if step == args.warmup_steps:
            dist.barrier()
            start = time.time()
        ix = torch.randint(len(data) - args.block, (args.batch,))
        x, y = batch_at(data, ix, args.block, "cpu")
        train_step(ddp, opt, x, y, args.lr, args.clip)
    dist.barrier()
    secs = time.time() - start
    if rank == 0:
        print(f"torch {torch.__version__}, cpu, DistributedDataParallel over {args.ranks} ranks (gloo), "
              f"{torch.get_num_threads()} threads each")
        print(f"tokens_per_s {args.ranks * args.steps_timed * args.batch * args.block / secs:.1f}")
    dist.destroy_process_group()


def run_bench_ddp(args):
    import tempfile
    import torch.multiprocessing as mp
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(_ddp_worker, args=(args, os.path.join(tmp, "rendezvous")), nprocs=args.ranks, join=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data")
    p.add_argument("--out")
    p.add_argument("--bench", action="store_true")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--block", type=int, default=64)
    p.add_argument("--batch", type=int, default=12)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--min-lr", type=float, default=1e-4)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.99)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--log-every", type=int, default=100)
    p.add_argument("--threads", type=int, default=0, help="0: one per CPU")
    p.add_argument("--warmup-steps", type=int, default=5,
                   help="--bench: untimed steps first; training: steps left out of its tokens_per_s")
    p.add_argument("--device", default="cpu", help="the torch device: cpu, cuda, cuda:N")
    p.add_argument("--ranks", type=int, default=1, help="--bench: processes under DistributedDataParallel")
    p.add_argument("--bucket-mb", type=float, default=25, help="--ranks: DDP's gradient bucket size (its default)")
    args = p.parse_args()
    torch.set_num_threads(args.threads or os.cpu_count() or 1)
    if args.device != "cpu":
        try:
            torch.empty(1, device=args.device)
        except (RuntimeError, AssertionError) as e:
            p.error(f"--device {args.device}: {str(e).splitlines()[0]}")
        if args.ranks > 1:
            p.error("--ranks runs on the CPU only (gloo): leave --device out")
    if args.bench:
        args.steps_timed = args.steps
        if args.ranks > 1:
            run_bench_ddp(args)
        else:
            run_bench(args)
    elif args.data:
        run_training(args)
    else:
        p.error("give --data FILE to train, or --bench")


if __name__ == "__main__":
    main()
