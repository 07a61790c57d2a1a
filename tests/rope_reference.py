"""Rotary position embeddings as the models' own code computes them, in float64, for
test_op_rope --torch-reference (tests/op_references.cmake).

Two independent formulations, neither kiln's:
  - Hugging Face's rotate_half (modeling_llama.py's apply_rotary_pos_emb): pairs (i, i + D/2),
    cos/sin of the angles concatenated twice; with Llama 3's rope scaling the inverse
    frequencies come from HF's _compute_llama3_parameters, and kiln's factors (llama.cpp's
    rope_freqs) are their ratio to the plain ones;
  - Meta's original llama code (model.py's apply_rotary_emb): adjacent pairs as complex
    numbers, multiplied by polar(1, angle).
The gradient comes from torch autograd of sum(y * w).

Output, one block per case:
  case LAYOUT BASE POS0 B T H D NFACTORS   (LAYOUT 0 adjacent, 1 half)
  factors F...                             (only when NFACTORS > 0)
  x ... / w ... / y ... / dx ...           (flat, row-major [B, T, H, D])"""
import os
import sys

try:
    import torch
except ImportError:
    print("skipping: no torch in this python", file=sys.stderr)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_rope import default_inv_freq, llama3_inv_freq, rotate_half  # noqa: E402

torch.manual_seed(30)
D64 = torch.float64


def hf_rope(x, inv_freq, pos0):
    # x [B, T, H, D]; HF applies [B, H, T, D] with cos/sin [B, T, D] unsqueezed at dim 1
    t = x.shape[1]
    positions = torch.arange(pos0, pos0 + t, dtype=D64)
    freqs = positions[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos()[None, :, None, :], emb.sin()[None, :, None, :]
    return x * cos + rotate_half(x) * sin


def meta_rope(x, inv_freq, pos0):
    t = x.shape[1]
    positions = torch.arange(pos0, pos0 + t, dtype=D64)
    freqs_cis = torch.polar(torch.ones(t, inv_freq.shape[0], dtype=D64), torch.outer(positions, inv_freq))
    xc = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
    out = torch.view_as_real(xc * freqs_cis[None, :, None, :]).flatten(3)
    return out


def emit(name, values):
    print(name, " ".join(repr(float(v)) for v in values.flatten().tolist()))


def case(layout, base, pos0, shape, llama3=False):
    b, t, h, d = shape
    inv_freq = default_inv_freq(base, d)
    factors = None
    if llama3:
        scaled = llama3_inv_freq(inv_freq, factor=8.0, low=1.0, high=4.0, original=8192)
        factors = (inv_freq / scaled).to(torch.float32).to(D64)  # kiln's factors are f32
        inv_freq = inv_freq / factors
    x = torch.randn(shape, dtype=D64).to(torch.float32).to(D64).requires_grad_(True)
    w = torch.randn(shape, dtype=D64).to(torch.float32).to(D64)
    y = (meta_rope if layout == 0 else hf_rope)(x, inv_freq, pos0)
    (y * w).sum().backward()
    print("case", layout, repr(base), pos0, b, t, h, d, 0 if factors is None else d // 2)
    if factors is not None:
        emit("factors", factors)
    emit("x", x.detach())
    emit("w", w)
    emit("y", y.detach())
    emit("dx", x.grad)


case(1, 10000.0, 0, (2, 5, 3, 8))
case(1, 500000.0, 17, (1, 6, 4, 64), llama3=True)
case(1, 1000000.0, 1000, (1, 1, 2, 16))
case(0, 10000.0, 3, (2, 4, 3, 16))
case(0, 500000.0, 100, (1, 3, 2, 64), llama3=True)
