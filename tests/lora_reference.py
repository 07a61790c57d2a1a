"""LoRA as PEFT computes it, written by hand from the paper (Hu et al. 2021) and PEFT's
LoraConfig / LoraModel semantics: peft is not in Debian 12. Nothing here comes from kiln.

A PEFT adapter folder holds adapter_config.json (r, lora_alpha, target_modules, ...) and
adapter_model.safetensors with one pair per adapted module M (its full name in the base
model, "transformer.h.0.attn.c_attn" or "model.layers.0.self_attn.q_proj"):
  base_model.model.M.lora_A.weight  [r, in]   (nn.Linear(in, r)'s weight)
  base_model.model.M.lora_B.weight  [out, r]  (nn.Linear(r, out)'s weight)
and the adapted module computes h = base(x) + scaling * B (A dropout(x)), scaling =
lora_alpha / r (lora_alpha / sqrt(r) under use_rslora), dropout off here (evaluation and the
replays run with p = 0). GPT-2's Conv1D stores W as [in, out] (fan_in_fan_out true): the
delta merged into that W is (B A)^T; A and B keep the shapes above either way.

Which modules an adapter covers is PEFT's check_target_module_exists: a string
target_modules is a regular expression matched against the whole module name, a list
matches a module whose name equals an entry or ends with "." + the entry, and "all-linear"
is every linear layer but the output head.

The base models are the tests' own float64 references: samples/nanogpt_torch.py's GPT
(GPT-2) and tests/llama/reference.py's Reference (the Llama family); apply_gpt2 and
apply_llama put an adapter on them, the base frozen, A and B trainable parameters.
"""
import json
import math
import os
import re

import torch
from torch import nn

from nanogpt_torch import load_safetensors

# The linear layers of a block, as PEFT names them relative to the block
BLOCK_LINEARS = {
    "gpt2": ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"),
    "llama": ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
              "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"),
}
# Where the blocks sit in Hugging Face's model (GPT2LMHeadModel, LlamaForCausalLM)
BLOCKS = {"gpt2": "transformer.h.", "llama": "model.layers."}
WEIGHT = re.compile(r"^base_model\.model\.(?P<module>.+)\.lora_(?P<which>[AB])\.weight$")


def linear_modules(family, n_layer):
    """The full names of every linear layer of the blocks: PEFT's candidates (the output head
    is left out, as all-linear leaves it out)."""
    return [f"{BLOCKS[family]}{i}.{m}" for i in range(n_layer) for m in BLOCK_LINEARS[family]]


def peft_selects(target_modules, module):
    """Whether PEFT adapts `module` (a full name) under target_modules."""
    if isinstance(target_modules, str):
        return target_modules == "all-linear" or re.fullmatch(target_modules, module) is not None
    return any(module == t or module.endswith("." + t) for t in target_modules)


def selected_modules(config, family, n_layer):
    """The modules the adapter's config selects in a base of that family and depth."""
    return {m for m in linear_modules(family, n_layer) if peft_selects(config["target_modules"], m)}


def scaling(config):
    """PEFT's LoraLayer.scaling: lora_alpha / r, or lora_alpha / sqrt(r) under use_rslora."""
    r = config["r"]
    return config["lora_alpha"] / (math.sqrt(r) if config.get("use_rslora") else r)


def read_adapter(folder):
    """(config, {module: (A, B)}) from a PEFT folder, A and B as float64 tensors. Raises
    ValueError for a tensor whose name is not a LoRA weight or a module without its pair."""
    with open(os.path.join(folder, "adapter_config.json")) as f:
        config = json.load(f)
    tensors, _ = load_safetensors(os.path.join(folder, "adapter_model.safetensors"))
    pairs = {}
    for name, value in tensors.items():
        m = WEIGHT.match(name)
        if not m:
            raise ValueError(f"{name}: not a PEFT LoRA weight")
        pairs.setdefault(m["module"], {})[m["which"]] = torch.from_numpy(value.astype("float64"))
    for module, ab in pairs.items():
        if set(ab) != {"A", "B"}:
            raise ValueError(f"{module}: lora_A and lora_B do not both appear")
    return config, {module: (ab["A"], ab["B"]) for module, ab in pairs.items()}


def lora_delta(x, a, b, scale):
    """scaling * B (A x) for rows x [..., in]: (x A^T) B^T, never the merged matrix."""
    return scale * ((x @ a.t()) @ b.t())


class LoraConv1D(nn.Module):
    """A GPT-2 Conv1D (y = x W + b, W [in, out]) with an adapter: y + scaling * B (A x)."""

    def __init__(self, base, a, b, scale):
        super().__init__()
        self.base, self.scale = base, scale
        self.lora_A = nn.Parameter(a.clone())
        self.lora_B = nn.Parameter(b.clone())

    def forward(self, x):
        return self.base(x) + lora_delta(x, self.lora_A, self.lora_B, self.scale)


def _check_shape(module, a, b, n_in, n_out):
    if a.shape[1] != n_in or b.shape[0] != n_out or a.shape[0] != b.shape[1]:
        raise ValueError(f"{module}: lora_A {list(a.shape)} and lora_B {list(b.shape)} do not fit "
                         f"[r, {n_in}] and [{n_out}, r]")


def apply_gpt2(model, adapters, scale):
    """Puts the adapters {module: (A, B)} on nanogpt_torch's GPT (names as GPT2LMHeadModel's,
    "transformer.h.N.attn.c_attn"), freezes the base and returns {module: LoraConv1D}."""
    model.requires_grad_(False)
    wrapped = {}
    for module, (a, b) in adapters.items():
        if not module.startswith(BLOCKS["gpt2"]):
            raise ValueError(f"{module}: not a module of GPT-2's blocks")
        path = module[len("transformer."):].split(".")  # h, N, attn, c_attn
        parent = model
        for part in path[:-1]:
            parent = parent[int(part)] if part.isdigit() else getattr(parent, part)
        base = getattr(parent, path[-1])
        _check_shape(module, a, b, base.weight.shape[0], base.weight.shape[1])
        layer = LoraConv1D(base, a.to(base.weight.dtype), b.to(base.weight.dtype), scale)
        setattr(parent, path[-1], layer)
        wrapped[module] = layer
    return wrapped


def apply_llama(ref, adapters, scale, frozen):
    """Puts the adapters on a tests/llama/reference.py Reference (its linear() is every
    projection, by HF module name), the base tensors `frozen` no longer requiring grad.
    Returns {module: (A, B)} as trainable float64 parameters."""
    for p in frozen:
        p.requires_grad_(False)
    params = {m: (nn.Parameter(a.double().clone()), nn.Parameter(b.double().clone())) for m, (a, b) in adapters.items()}
    for module, (a, b) in params.items():
        w = ref.w[module + ".weight"]
        _check_shape(module, a, b, w.shape[1], w.shape[0])
    base_linear = ref.linear

    def linear(x, module):
        y = base_linear(x, module)
        if module in params:
            y = y + lora_delta(x, *params[module], scale)
        return y

    ref.linear = linear
    return params
