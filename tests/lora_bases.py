"""The base models of the LoRA tests (lora_parity.py, peft_schema.py): random weights written
as kiln reads them, and the same weights in the float64 PyTorch references with PEFT's
adapters put on them (tests/lora_reference.py).

  gpt2_base(work, seed)        GPT-2 (samples/nanogpt_torch.py's GPT, Conv1D layout)
  llama_base(work, seed, o)    the Llama family (llama_parity.py's Reference, HF's semantics;
                               o: its options, e.g. {"heads": 4, "kv_heads": 2})
Both at a vocabulary of 256, so `kiln train --init` trains them on bytes.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "samples"))
import torch  # noqa: E402

import lora_reference  # noqa: E402
from nanogpt_torch import GPT  # noqa: E402

VOCAB = 256
GPT2_CFG = {"n_layer": 2, "n_head": 2, "n_embd": 32, "n_positions": 40, "vocab_size": VOCAB,
            "layer_norm_epsilon": 1e-5}


class Base:
    """A base: its file, its family, its float64 reference (model(ids, targets) -> logits,
    loss), and each linear module's (in, out)."""

    def __init__(self, family, path, model, shapes, frozen):
        self.family, self.path, self.model, self.shapes, self.frozen = family, path, model, shapes, frozen
        self.n_layer = len(shapes) // len(lora_reference.BLOCK_LINEARS[family])

    def adapt(self, adapters, scale):
        """Puts {module: (A, B)} on the reference, the base frozen; returns {module: (A, B)}
        as the trainable parameters."""
        if self.family == "gpt2":
            wrapped = lora_reference.apply_gpt2(self.model, adapters, scale)
            return {m: (layer.lora_A, layer.lora_B) for m, layer in wrapped.items()}
        return lora_reference.apply_llama(self.model, adapters, scale, self.frozen)


def gpt2_base(work, seed):
    """GPT-2 with random weights, LayerNorms and biases moved off their init so they count."""
    torch.manual_seed(seed)
    model = GPT(GPT2_CFG)
    model.init_weights()
    with torch.no_grad():
        for p in model.parameters():
            p.add_((0.1 if p.dim() == 1 else 0.05) * torch.randn_like(p))
    path = os.path.join(work, f"gpt2_base_{seed}.safetensors")
    model.save(path)  # float32, as kiln reads it; the reference computes in float64
    model.double()
    shapes = {}
    for i, block in enumerate(model.h):
        for name, conv in (("attn.c_attn", block.attn.c_attn), ("attn.c_proj", block.attn.c_proj),
                           ("mlp.c_fc", block.mlp.c_fc), ("mlp.c_proj", block.mlp.c_proj)):
            shapes[f"transformer.h.{i}.{name}"] = tuple(conv.weight.shape)  # Conv1D: [in, out]
    return Base("gpt2", path, model, shapes, list(model.parameters()))


def llama_base(work, seed, o):
    """A Llama-family model (llama_parity.py's Reference with options o) at vocabulary 256."""
    import llama_parity
    ref = llama_parity.Reference(dict(o, vocab=VOCAB), seed)
    path = os.path.join(work, f"llama_base_{seed}.safetensors")
    ref.save(path)
    w = ref.w
    shapes = {m: (w[m + ".weight"].shape[1], w[m + ".weight"].shape[0])  # nn.Linear: [out, in]
              for m in lora_reference.linear_modules("llama", llama_parity.L)}
    return Base("llama", path, ref, shapes, list(ref.p.values()))


def train_text(path, size=6000):
    """Deterministic English-like bytes for `kiln train --data`."""
    from gpt_parity import sample_text
    sample_text(path, size)
    return path
