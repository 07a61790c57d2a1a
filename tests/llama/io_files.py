"""Files of other tools, written here from their formats' specifications (not from kiln):
Hugging Face folders (config.json, model.safetensors or a sharded index, F32/F16/BF16) and
GGUF files with llama.cpp's keys and tensor names (convert_hf_to_gguf.py's layout: llama's
q/k rows permuted, 1-D tensors in f32, matrices in the file's type, Q8_0 blocks as ggml's
reference quantizer makes them)."""
import json
import os
import struct

import numpy as np
import torch

ST_DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}


def round_to(t, dtype):
    """What a file of dtype holds for t, back in float64."""
    return t.detach().to(dtype).double()


def st_write(path, tensors):
    """{name: torch tensor} (f32, f16 or bf16) as safetensors."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        raw = t.detach().contiguous().view(torch.uint8).numpy().tobytes() if t.dim() else b""
        header[name] = {"dtype": ST_DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def hf_write(folder, config, tensors, dtype, shards=1):
    """An HF folder: config.json and the tensors in dtype, in one file or `shards` files with
    model.safetensors.index.json."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    names = list(tensors)
    if shards == 1:
        st_write(os.path.join(folder, "model.safetensors"), {n: tensors[n].to(dtype) for n in names})
        return
    weight_map = {}
    for s in range(shards):
        file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = names[s::shards]
        st_write(os.path.join(folder, file), {n: tensors[n].to(dtype) for n in part})
        weight_map.update({n: file for n in part})
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f)


# ---- GGUF ----

GGML_F32, GGML_F16, GGML_Q8_0, GGML_BF16 = 0, 1, 8, 30
_U32, _F32, _STR, _ARR = 4, 6, 8, 9


def llama_permute(w, n_head):
    """convert_hf_to_gguf.py's LlamaModel.permute of q or k rows (n_head: the tensor's heads)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def q8_0(t):
    """ggml's Q8_0 blocks of t [rows, cols] and the values they stand for."""
    x = t.detach().double().reshape(-1, 32)
    d = x.abs().amax(1, keepdim=True) / 127
    q = torch.where(d > 0, torch.round(x / torch.where(d > 0, d, torch.ones_like(d))), torch.zeros_like(x))
    d16 = d.to(torch.float16)
    raw = b"".join(d16[i].view(torch.uint8).numpy().tobytes() + q[i].to(torch.int8).numpy().tobytes()
                   for i in range(x.shape[0]))
    return raw, (d16.double() * q).reshape(t.shape)


def tensor_bytes(t, ggml_type):
    """(bytes, the values the file holds as float64)."""
    if ggml_type == GGML_Q8_0:
        return q8_0(t)
    dtype = {GGML_F32: torch.float32, GGML_F16: torch.float16, GGML_BF16: torch.bfloat16}[ggml_type]
    held = t.detach().to(dtype)
    return held.contiguous().view(torch.uint8).numpy().tobytes(), held.double()


def _str(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_write(path, kvs, tensors):
    """kvs: [(key, value)] (str, int: u32, float: f32, list of str); tensors: [(name, ggml
    type, torch shape, bytes)]. Version 3, alignment 32."""
    out = [b"GGUF", struct.pack("<IQQ", 3, len(tensors), len(kvs))]
    for key, v in kvs:
        out.append(_str(key))
        if isinstance(v, str):
            out.append(struct.pack("<I", _STR) + _str(v))
        elif isinstance(v, float):
            out.append(struct.pack("<If", _F32, v))
        elif isinstance(v, int):
            out.append(struct.pack("<II", _U32, v))
        else:
            out.append(struct.pack("<IIQ", _ARR, _STR, len(v)) + b"".join(_str(s) for s in v))
    offset, datas = 0, []
    for name, typ, shape, raw in tensors:
        ne = list(reversed(shape))
        out.append(_str(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
                   + struct.pack("<IQ", typ, offset))
        pad = (32 - len(raw) % 32) % 32
        datas.append(raw + b"\0" * pad)
        offset += len(raw) + pad
    head = b"".join(out)
    head += b"\0" * ((32 - len(head) % 32) % 32)
    with open(path, "wb") as f:
        f.write(head + b"".join(datas))
