"""Hugging Face's rotary embeddings, written here from transformers' code (not from kiln), for
the float64 references of the tests (rope_reference.py, llama_parity.py, llama/reference.py):
rotate_half of modeling_llama.py's apply_rotary_pos_emb (pairs (i, i + D/2)), and the
inverse frequencies of modeling_rope_utils.py: _compute_default_rope_parameters, then
_compute_llama3_parameters for Llama 3.x's rope_scaling."""
import math

import torch


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def default_inv_freq(base, dim):
    """1 / base^(2i / dim) for the dim / 2 pairs of a head, float64."""
    return 1.0 / base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)


def llama3_inv_freq(inv_freq, factor, low, high, original):
    """_compute_llama3_parameters: the inverse frequencies Llama 3.x scales (factor,
    low_freq_factor, high_freq_factor, original_max_position_embeddings)."""
    low_wavelen, high_wavelen = original / low, original / high
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > low_wavelen, inv_freq / factor, inv_freq)
    smooth = (original / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
    return torch.where(medium, smoothed, scaled)
