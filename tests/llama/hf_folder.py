"""Hugging Face model folders as transformers' save_pretrained leaves them: config.json, and
model.safetensors or shards model-0000i-of-0000n.safetensors with model.safetensors.index.json
(weight_map: tensor name -> shard file). Tensors in HF's names and [out, in] layout, stored as
F32, F16 or BF16 (BF16 as the upper half of the float32 bits: the weights of models.py are
exact in bf16, and write() checks it). write_rounded() and read_f64() are the same for torch
tensors of any value: each rounded to the file's type first."""
import json
import os
import struct

import numpy as np
import torch

DTYPES = ("F32", "F16", "BF16")


def _encode(a, dtype):
    a = np.ascontiguousarray(a, np.float32)
    if dtype == "F32":
        return a.astype("<f4").tobytes()
    if dtype == "F16":
        h = a.astype("<f2")
        assert np.array_equal(h.astype(np.float32), a), "a weight is not exact in f16"
        return h.tobytes()
    bits = a.view(np.uint32)
    assert np.all(bits & 0xFFFF == 0), "a weight is not exact in bf16"
    return (bits >> 16).astype("<u2").tobytes()


PLAIN = {"F64": "<f8", "I64": "<i8", "I32": "<i4"}  # the test data's own arrays


def _decode(raw, dtype, shape):
    if dtype in PLAIN:
        a = np.frombuffer(raw, PLAIN[dtype])
    elif dtype == "F32":
        a = np.frombuffer(raw, "<f4")
    elif dtype == "F16":
        a = np.frombuffer(raw, "<f2").astype(np.float32)
    elif dtype == "BF16":
        a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
    else:
        raise ValueError(f"dtype {dtype} is not one these tests write")
    return a.reshape(shape).copy()  # writable, apart from the file's bytes


def write_safetensors(path, tensors, dtype=None):
    """tensors {name: array} as dtype (F32, F16, BF16), or each in its own numpy type where
    dtype is None (float64, int64, int32: the tests' own data)."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, a in tensors.items():
        if dtype is None:
            kind = next(k for k, v in PLAIN.items() if np.dtype(v) == a.dtype.newbyteorder("<"))
            raw = np.ascontiguousarray(a, PLAIN[kind]).tobytes()
        else:
            kind, raw = dtype, _encode(a, dtype)
        header[name] = {"dtype": kind, "shape": list(a.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for raw in blobs:
            f.write(raw)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    base = 8 + n
    return {name: _decode(data[base + i["data_offsets"][0]:base + i["data_offsets"][1]], i["dtype"], i["shape"])
            for name, i in header.items()}


def write(folder, cfg, tensors, dtype, shards=1, tokenizer=None):
    """The folder: config.json (torch_dtype as dtype says), the weights in `shards` files,
    and tokenizer.json when given (a dict)."""
    os.makedirs(folder, exist_ok=True)
    cfg = dict(cfg, torch_dtype={"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[dtype])
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    if tokenizer is not None:
        with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tokenizer, f, indent=1, ensure_ascii=False)
    if shards == 1:
        write_safetensors(os.path.join(folder, "model.safetensors"), tensors, dtype)
        return
    names = list(tensors)
    weight_map, size = {}, 0
    for s in range(shards):
        part = names[s * len(names) // shards:(s + 1) * len(names) // shards]
        file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        write_safetensors(os.path.join(folder, file), {n: tensors[n] for n in part}, dtype)
        weight_map.update({n: file for n in part})
        size += sum(tensors[n].size * (4 if dtype == "F32" else 2) for n in part)
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": size}, "weight_map": weight_map}, f, indent=2)


TORCH_DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}


def write_rounded(folder, cfg, tensors, dtype, shards=1):
    """write() of {name: torch tensor} with dtype a torch float type: each tensor rounded to
    dtype first, as the file holds it."""
    exact = {n: t.detach().to(dtype).float().numpy() for n, t in tensors.items()}
    write(folder, cfg, exact, TORCH_DTYPES[dtype], shards)


def read_f64(path):
    """A safetensors file's tensors {name: torch tensor as float64}."""
    return {n: torch.from_numpy(a).double() for n, a in read_safetensors(path).items()}


def read(folder):
    """(config dict, {name: float32 array}) of a folder written by write() or by kiln."""
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    index = os.path.join(folder, "model.safetensors.index.json")
    if not os.path.exists(index):
        return cfg, read_safetensors(os.path.join(folder, "model.safetensors"))
    with open(index) as f:
        files = sorted(set(json.load(f)["weight_map"].values()))
    tensors = {}
    for file in files:
        tensors.update(read_safetensors(os.path.join(folder, file)))
    return cfg, tensors
