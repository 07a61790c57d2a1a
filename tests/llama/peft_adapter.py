"""A LoRA adapter in Hugging Face PEFT's files, written here without PEFT (Debian has none):
adapter_config.json and adapter_model.safetensors with PEFT's full module names
("base_model.model.transformer.h.N.attn.c_attn.lora_A.weight" for GPT-2,
"base_model.model.model.layers.N.self_attn.q_proj.lora_B.weight" for the Llama family),
lora_A [r, in] and lora_B [out, r] in F32. A is PEFT's init (uniform(-1/sqrt(in), 1/sqrt(in)),
kaiming_uniform_(a=sqrt(5))); B is random normal with std b_std, not PEFT's zeros, so the
adapter changes what the model computes (an untrained adapter would test nothing)."""
import json
import os

import numpy as np

import hf_folder

GPT2 = ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")
LLAMA = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
         "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")


def shapes(family, dim, heads, kv, head_dim, ffn):
    """{module: (in, out)} of a block."""
    q, k = heads * head_dim, kv * head_dim
    if family == "gpt2":
        return {"attn.c_attn": (dim, 3 * dim), "attn.c_proj": (dim, dim), "mlp.c_fc": (dim, ffn),
                "mlp.c_proj": (ffn, dim)}
    return {"self_attn.q_proj": (dim, q), "self_attn.k_proj": (dim, k), "self_attn.v_proj": (dim, k),
            "self_attn.o_proj": (q, dim), "mlp.gate_proj": (dim, ffn), "mlp.up_proj": (dim, ffn),
            "mlp.down_proj": (ffn, dim)}


def write(folder, family, layers, sizes, rank, alpha, seed, b_std):
    """PEFT's two files in folder for every module of sizes ({module: (in, out)}) in each layer."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    prefix = "base_model.model.transformer.h." if family == "gpt2" else "base_model.model.model.layers."
    tensors = {}
    for layer in range(layers):
        for module, (n_in, n_out) in sizes.items():
            bound = 1.0 / np.sqrt(n_in)
            tensors[f"{prefix}{layer}.{module}.lora_A.weight"] = rng.uniform(-bound, bound, (rank, n_in)).astype(np.float32)
            tensors[f"{prefix}{layer}.{module}.lora_B.weight"] = rng.normal(0.0, b_std, (n_out, rank)).astype(np.float32)
    hf_folder.write_safetensors(os.path.join(folder, "adapter_model.safetensors"), tensors, "F32")
    config = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": rank, "lora_alpha": alpha, "lora_dropout": 0.0,
              "target_modules": sorted({m.split(".")[-1] for m in sizes}), "bias": "none",
              "fan_in_fan_out": family == "gpt2", "base_model_name_or_path": "kiln-test"}
    with open(os.path.join(folder, "adapter_config.json"), "w") as f:
        json.dump(config, f, indent=1)
    return tensors
