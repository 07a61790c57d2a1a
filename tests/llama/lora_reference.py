"""Float64 references of a base with LoRA adapters merged by PEFT's arithmetic (W + scale *
alpha / r * B A per adapted module, read from PEFT's files; nothing of kiln's), for choosing
prompts that are decisive (select_prompts.py's rule) for the adapted model, so that the greedy
tokens of kiln and llama.cpp are compared where no near tie can flip them:
  - llama(): the Llama family, through reference.py on a Hugging Face folder;
  - Gpt2(): GPT-2 through samples/nanogpt_torch.py's model reading a kiln checkpoint, its
    Conv1D weights [in, out] getting (B A)^T.
Each comes with the same model with its projections' inputs rounded to 8 bits (a Q8_0
product's arithmetic, as select_prompts.Q8Activations)."""
import json
import os
import shutil
import sys

import numpy as np
import torch

import hf_folder
import reference
import select_prompts

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "samples"))
from nanogpt_torch import GPT, load_safetensors  # noqa: E402


def deltas(adapters):
    """[(PEFT folder, user scale)] -> [(module path after "base_model.model.", scale alpha/r B A)]."""
    out = []
    for folder, scale in adapters:
        with open(os.path.join(folder, "adapter_config.json")) as f:
            cfg = json.load(f)
        s = scale * cfg["lora_alpha"] / cfg["r"]
        t = hf_folder.read_safetensors(os.path.join(folder, "adapter_model.safetensors"))
        for name, a in t.items():
            if name.endswith(".lora_A.weight"):
                b = t[name.replace(".lora_A.", ".lora_B.")]
                module = name[len("base_model.model."):-len(".lora_A.weight")]
                out.append((module, s * (b.astype(np.float64) @ a.astype(np.float64))))
    return out


def llama(hf_f32, adapters, out):
    """(exact, rounded) references of the folder hf_f32 with the adapters merged (written to out)."""
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(hf_f32, out)
    path = os.path.join(out, "model.safetensors")
    w = hf_folder.read_safetensors(path)
    for module, d in deltas(adapters):
        w[module + ".weight"] = (w[module + ".weight"].astype(np.float64) + d).astype(np.float32)
    hf_folder.write_safetensors(path, w, "F32")
    return select_prompts.references(out)


class Gpt2:
    """A kiln GPT-2 checkpoint in float64 with the adapters merged; greedy() as reference.py's."""

    def __init__(self, ckpt, adapters, round8=False):
        tensors, meta = load_safetensors(ckpt)
        cfg = {k: int(meta[k]) for k in ("n_layer", "n_head", "n_embd", "n_positions", "vocab_size")}
        cfg["layer_norm_epsilon"] = float(meta.get("layer_norm_epsilon", 1e-5))
        state = {k: torch.from_numpy(v.astype(np.float64)) for k, v in tensors.items()}
        for module, d in deltas(adapters):  # "transformer.h.0.attn.c_attn": Conv1D [in, out]
            state[module[len("transformer."):] + ".weight"] += torch.from_numpy(d.T)
        self.model = GPT(cfg).double()
        self.model.load_state_dict(state, strict=True)
        self.model.eval()
        if round8:
            for m in self.model.modules():
                if type(m).__name__ == "Conv1D":
                    m.forward = lambda x, m=m: select_prompts.round_8bit(x) @ m.weight + m.bias

    def logits(self, ids):
        with torch.no_grad():
            return self.model(ids)

    greedy = reference.Reference.greedy


def gpt2(ckpt, adapters):
    return Gpt2(ckpt, adapters), Gpt2(ckpt, adapters, round8=True)


def decisive_prompts(refs, candidates, n=3):
    """The first n candidates decisive for every (exact, rounded) pair of refs, and the
    smallest margin among them; fewer when the candidates run out."""
    chosen, low = [], float("inf")
    for p in candidates:
        found = [select_prompts.decisive(exact, rounded, p) for exact, rounded in refs]
        if all(found):
            chosen.append(p)
            low = min([low] + [f[1] for f in found])
            if len(chosen) == n:
                break
    return chosen, low
