#!/usr/bin/python3
"""The adapters `kiln train --lora-rank` writes hold PEFT's layout: a schema test, since peft
itself is not in Debian 12. The schema is PEFT's documentation and its LoraConfig / PeftConfig
dataclasses (peft 0.6 to 0.17) and save_pretrained's files:

  adapter_config.json  peft_type "LORA", task_type "CAUSAL_LM", r (int > 0), lora_alpha
      (number), lora_dropout (number in [0, 1)), target_modules (list of str, or a regular
      expression string, or "all-linear"), fan_in_fan_out (true for GPT-2's Conv1D, false
      for nn.Linear), bias "none", base_model_name_or_path (str); no key LoraConfig does not
      have (older PEFT refuses the file), and the keys that change what LoRA computes
      (use_rslora, use_dora, rank_pattern, alpha_pattern, modules_to_save, ...) absent or at
      their plain-LoRA values.
  adapter_model.safetensors  only base_model.model.<module>.lora_A.weight [r, in] and
      .lora_B.weight [out, r] in F32, one pair for exactly the modules target_modules selects
      under PEFT's matching, the data packed without holes, metadata "format": "pt".

  peft_schema.py --kiln PATH/kiln --workdir DIR [--backend cpu|vulkan|opencl]

First the checker itself: a folder written here as PEFT's save_pretrained writes it must
pass, and each of a list of faults put into it must be found. Then kiln's adapters: GPT-2
and a Llama-family base, each with the default targets (every linear of the blocks) and with
a list of suffixes. Exit 0: pass, 1: fail, 77: skipped.
"""
import copy
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "samples"))
# parity_checks first: it exits 77 (skipped) where torch or numpy is missing
from parity_checks import check, finish, kiln_ok, parity_args  # noqa: E402
import numpy as np  # noqa: E402

import lora_bases  # noqa: E402
from lora_reference import WEIGHT, linear_modules, selected_modules  # noqa: E402
from nanogpt_torch import save_safetensors  # noqa: E402

# PeftConfigMixin / PeftConfig, then LoraConfig's fields, across PEFT's releases
PEFT_CONFIG_KEYS = {"peft_type", "auto_mapping", "base_model_name_or_path", "revision", "task_type",
                    "inference_mode", "peft_version"}
LORA_CONFIG_KEYS = {"r", "target_modules", "exclude_modules", "lora_alpha", "lora_dropout", "fan_in_fan_out",
                    "bias", "use_rslora", "modules_to_save", "init_lora_weights", "layers_to_transform",
                    "layers_pattern", "rank_pattern", "alpha_pattern", "megatron_config", "megatron_core",
                    "loftq_config", "eva_config", "corda_config", "use_dora", "layer_replication", "lora_bias",
                    "trainable_token_indices", "target_parameters", "use_qalora", "qalora_group_size"}
NUMBER = (int, float)
REQUIRED = {"peft_type": str, "task_type": str, "r": int, "lora_alpha": NUMBER, "lora_dropout": NUMBER,
            "target_modules": (list, str), "fan_in_fan_out": bool, "bias": str, "base_model_name_or_path": str}
# Keys whose other values make PEFT compute something else than h = W x + alpha/r B A x
PLAIN_LORA = {"use_rslora": (False,), "use_dora": (False,), "lora_bias": (False,), "modules_to_save": (None, []),
              "layers_to_transform": (None,), "rank_pattern": ({}, None), "alpha_pattern": ({}, None),
              "exclude_modules": (None, []), "layer_replication": (None,), "trainable_token_indices": (None,),
              "target_parameters": (None, []), "use_qalora": (False,), "megatron_config": (None,),
              "init_lora_weights": (True, False, "gaussian")}


def is_type(value, types):
    """isinstance, but a JSON true is no int or number."""
    types = types if isinstance(types, tuple) else (types,)
    return bool in types if isinstance(value, bool) else isinstance(value, types)


def config_problems(cfg, family, n_layer, rank, alpha, dropout, targets):
    """What in adapter_config.json is not PEFT's LoRA config for this adapter (targets: the
    user's --lora-targets, which target_modules must select the same modules as)."""
    out = [f"unknown key {k!r}" for k in sorted(set(cfg) - PEFT_CONFIG_KEYS - LORA_CONFIG_KEYS)]
    for key, types in REQUIRED.items():
        if key not in cfg:
            out.append(f"no {key!r}")
        elif not is_type(cfg[key], types):
            out.append(f"{key} is {cfg[key]!r}, not {types}")
    if out:
        return out
    want = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "bias": "none", "r": rank, "lora_alpha": alpha,
            "fan_in_fan_out": family == "gpt2"}
    out += [f"{k} is {cfg[k]!r}, not {v!r}" for k, v in want.items() if cfg[k] != v]
    if abs(cfg["lora_dropout"] - dropout) > 1e-6:
        out.append(f"lora_dropout is {cfg['lora_dropout']}, not {dropout}")
    out += [f"{k} is {cfg[k]!r}: not plain LoRA" for k, ok in PLAIN_LORA.items() if k in cfg and cfg[k] not in ok]
    t = cfg["target_modules"]
    if isinstance(t, list) and not all(isinstance(s, str) for s in t):
        out.append(f"target_modules {t!r} holds a non-string")
    elif targets is not None and selected_modules(cfg, family, n_layer) != selected_modules(
            {"target_modules": targets}, family, n_layer):
        out.append(f"target_modules {t!r} selects other modules than the user's {targets!r}")
    return out


def read_header(path):
    """The safetensors header (tensors and metadata) and the data's length."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        return header, os.path.getsize(path) - 8 - n


def tensor_problems(header, data_len, cfg, base):
    """What in adapter_model.safetensors is not PEFT's: names, pairs, shapes, dtype, packing."""
    header = dict(header)
    meta = header.pop("__metadata__", None) or {}
    out = [] if meta.get("format") == "pt" else [f"metadata format is {meta.get('format')!r}, not 'pt'"]
    pairs, spans = {}, []
    for name, info in header.items():
        m = WEIGHT.match(name)
        if not m or m["module"] not in base.shapes:
            out.append(f"{name}: not a LoRA weight of a linear module of the base")
            continue
        pairs.setdefault(m["module"], {})[m["which"]] = info
        spans.append(tuple(info["data_offsets"]))
        if info["dtype"] != "F32":
            out.append(f"{name}: dtype {info['dtype']}, not F32")
    at = 0
    for begin, end in sorted(spans):
        if begin != at:
            out.append(f"data not packed: a tensor starts at {begin}, the previous ends at {at}")
        at = end
    if at != data_len:
        out.append(f"the tensors end at {at} of {data_len} data bytes")
    selected = selected_modules(cfg, base.family, base.n_layer)
    if set(pairs) != selected:
        out.append(f"adapted modules {sorted(set(pairs) ^ selected)} differ from what target_modules selects")
    r = cfg["r"]
    for module, ab in sorted(pairs.items()):
        n_in, n_out = base.shapes[module]
        for which, shape in (("A", [r, n_in]), ("B", [n_out, r])):
            if which not in ab:
                out.append(f"{module}: no lora_{which}")
            elif ab[which]["shape"] != shape:
                out.append(f"{module}.lora_{which}: shape {ab[which]['shape']}, not {shape}")
    return out


def problems(folder, base, rank, alpha, dropout, targets):
    with open(os.path.join(folder, "adapter_config.json")) as f:
        cfg = json.load(f)
    out = config_problems(cfg, base.family, base.n_layer, rank, alpha, dropout, targets)
    if out:
        return out
    header, data_len = read_header(os.path.join(folder, "adapter_model.safetensors"))
    return tensor_problems(header, data_len, cfg, base)


def write_as_peft(folder, base, rank, alpha, targets):
    """A folder as PEFT's save_pretrained writes one (peft 0.13's keys), for the checker's own test."""
    os.makedirs(folder, exist_ok=True)
    cfg = {"alpha_pattern": {}, "auto_mapping": None, "base_model_name_or_path": "gpt2", "bias": "none",
           "fan_in_fan_out": base.family == "gpt2", "inference_mode": True, "init_lora_weights": True,
           "layer_replication": None, "layers_pattern": None, "layers_to_transform": None, "loftq_config": {},
           "lora_alpha": alpha, "lora_dropout": 0.0, "megatron_config": None, "megatron_core": "megatron.core",
           "modules_to_save": None, "peft_type": "LORA", "r": rank, "rank_pattern": {}, "revision": None,
           "target_modules": targets, "task_type": "CAUSAL_LM", "use_dora": False, "use_rslora": False}
    with open(os.path.join(folder, "adapter_config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    tensors = {}
    for m in sorted(selected_modules(cfg, base.family, base.n_layer)):
        n_in, n_out = base.shapes[m]
        tensors[f"base_model.model.{m}.lora_A.weight"] = np.full((rank, n_in), 0.5, np.float32)
        tensors[f"base_model.model.{m}.lora_B.weight"] = np.zeros((n_out, rank), np.float32)
    save_safetensors(os.path.join(folder, "adapter_model.safetensors"), tensors, {"format": "pt"})


def config_faults(cfg):
    """Faults of adapter_config.json the checker must find: (what, faulty config)."""
    def edit(**changes):
        c = copy.deepcopy(cfg)
        for k, v in changes.items():
            if v is KeyError:
                del c[k]
            else:
                c[k] = v
        return c
    return [("no peft_type", edit(peft_type=KeyError)), ("r as a string", edit(r="4")),
            ("r a bool", edit(r=True)), ("fan_in_fan_out flipped", edit(fan_in_fan_out=not cfg["fan_in_fan_out"])),
            ("an unknown key", edit(lora_rank=4)), ("task_type", edit(task_type="SEQ_CLS")),
            ("rsLoRA scaling", edit(use_rslora=True)), ("a rank pattern", edit(rank_pattern={"c_fc": 2})),
            ("bias all", edit(bias="all")), ("another alpha", edit(lora_alpha=cfg["lora_alpha"] + 1)),
            ("other targets", edit(target_modules=["c_fc"]))]


def tensor_faults(header):
    """Faults of the safetensors header the checker must find: (what, faulty header)."""
    names = sorted(n for n in header if n != "__metadata__")
    a, b = names[0], next(n for n in names if n.endswith("lora_B.weight"))

    def edit(f):
        h = copy.deepcopy(header)
        f(h)
        return h

    def rename(h, old, new):
        h[new] = h.pop(old)
    return [("B transposed", edit(lambda h: h[b].update(shape=h[b]["shape"][::-1]))),
            ("F16", edit(lambda h: h[a].update(dtype="F16"))),
            ("a PEFT name without .weight", edit(lambda h: rename(h, a, a[:-len(".weight")]))),
            ("the base's own tensor", edit(lambda h: rename(h, a, "base_model.model.transformer.wte.weight"))),
            ("a module without lora_B", edit(lambda h: h.pop(b))),
            ("no format metadata", edit(lambda h: h.pop("__metadata__")))]


def test_checker(args, base):
    """The checker passes PEFT's own layout and finds each fault put into it."""
    folder = os.path.join(args.workdir, "as_peft")
    targets = ["c_attn", "mlp.c_proj"]
    write_as_peft(folder, base, 4, 8, targets)
    found = problems(folder, base, 4, 8, 0.0, targets)
    check("checker: PEFT's own layout passes", not found, "; ".join(found) or "no problem")
    with open(os.path.join(folder, "adapter_config.json")) as f:
        cfg = json.load(f)
    header, data_len = read_header(os.path.join(folder, "adapter_model.safetensors"))
    missed = [w for w, c in config_faults(cfg)
              if not config_problems(c, base.family, base.n_layer, 4, 8, 0.0, targets)]
    missed += [w for w, h in tensor_faults(header) if not tensor_problems(h, data_len, cfg, base)]
    narrower = dict(cfg, target_modules=["c_attn"])  # the file then holds modules it does not select
    missed += [] if tensor_problems(header, data_len, narrower, base) else ["target_modules narrower than the file"]
    check("checker: finds every fault put into PEFT's layout", not missed, f"missed {missed}" if missed else
          f"{len(config_faults(cfg)) + len(tensor_faults(header)) + 1} faults found")


def test_kiln(args, base, text, name, targets, rank=4, alpha=8, dropout=0.0):
    """kiln's adapter trained from base with these targets (None: the default)."""
    out = os.path.join(args.workdir, name)
    argv = ["train", "--init", base.path, "--data", text, "--out", out, "--lora-rank", str(rank),
            "--lora-alpha", str(alpha), "--lora-dropout", str(dropout), "--block", "16", "--batch", "2", "--steps", "2", "--warmup", "0",
            "--eval-every", "0", "--seed", "3", "--backend", args.backend]
    if targets is not None:
        argv += ["--lora-targets", ",".join(targets)]
    if kiln_ok(args, f"{name}: kiln train", *argv) is None:
        return
    found = problems(out, base, rank, alpha, dropout, targets)
    with open(os.path.join(out, "adapter_config.json")) as f:
        cfg = json.load(f)
    if not found and targets is None:  # the default: every linear layer of the blocks
        every = set(linear_modules(base.family, base.n_layer))
        if selected_modules(cfg, base.family, base.n_layer) != every:
            found.append(f"target_modules {cfg['target_modules']!r} does not select every linear layer")
    tensors = len(read_header(os.path.join(out, "adapter_model.safetensors"))[0]) - 1
    check(f"{name}: PEFT's layout", not found,
          "; ".join(found) or f"target_modules {cfg['target_modules']}, {tensors} tensors")


def main():
    args = parity_args()
    text = lora_bases.train_text(os.path.join(args.workdir, "text.txt"))
    gpt2 = lora_bases.gpt2_base(args.workdir, 11)
    llama = lora_bases.llama_base(args.workdir, 12, {"heads": 4, "kv_heads": 2})
    test_checker(args, gpt2)
    test_kiln(args, gpt2, text, "gpt2_default", None)
    test_kiln(args, gpt2, text, "gpt2_suffixes", ["c_attn", "c_proj"])  # c_proj: both of GPT-2's
    test_kiln(args, llama, text, "llama_default", None)
    test_kiln(args, llama, text, "llama_suffixes", ["q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"], 2, 5.5,
              0.1)
    finish("kiln's adapters hold PEFT's layout")


if __name__ == "__main__":
    main()
