"""Files of other tools, written here from their formats' specifications (not from kiln):
Hugging Face folders (through h-peers' hf_folder.py: config.json, model.safetensors or a
sharded index, F32/F16/BF16) and GGUF files with llama.cpp's keys and tensor names (convert_hf_to_gguf.py's layout: llama's
q/k rows permuted, 1-D tensors in f32, matrices in the file's type, Q8_0 blocks as ggml's
reference quantizer makes them)."""
import struct

import numpy as np
import torch

import hf_folder

ST_DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}


def round_to(t, dtype):
    """What a file of dtype holds for t, back in float64."""
    return t.detach().to(dtype).double()


def hf_write(folder, config, tensors, dtype, shards=1):
    """An HF folder through h-peers' hf_folder.write ({name: torch tensor}, dtype a torch
    float type): each tensor rounded to dtype first, as the file holds it."""
    exact = {n: t.detach().to(dtype).float().numpy() for n, t in tensors.items()}
    hf_folder.write(folder, config, exact, ST_DTYPES[dtype], shards)


def st_read(path):
    """A safetensors file's tensors {name: torch tensor as float64} (hf_folder.read_safetensors)."""
    return {n: torch.from_numpy(a).double() for n, a in hf_folder.read_safetensors(path).items()}


# ---- GGUF ----

GGML_F32, GGML_F16, GGML_Q8_0, GGML_BF16 = 0, 1, 8, 30
_U32, _F32, _STR, _ARR = 4, 6, 8, 9


def llama_permute(w, n_head):
    """convert_hf_to_gguf.py's LlamaModel.permute of q or k rows (n_head: the tensor's heads)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def q8_0(t):
    """ggml's Q8_0 blocks of t [rows, cols] as quantize_row_q8_0_ref makes them (float32: d =
    amax / 127, q = roundf(x * (1 / d)), d stored as f16), and the values they stand for."""
    x = t.detach().float().reshape(-1, 32)
    d = x.abs().amax(1, keepdim=True) / 127
    inv = torch.where(d > 0, 1 / torch.where(d > 0, d, torch.ones_like(d)), torch.zeros_like(d))
    v = x * inv
    q = torch.sign(v) * torch.floor(v.abs() + 0.5)  # roundf: halves away from zero
    d16 = d.to(torch.float16)
    raw = b"".join(d16[i].view(torch.uint8).numpy().tobytes() + q[i].to(torch.int8).numpy().tobytes()
                   for i in range(x.shape[0]))
    return raw, (d16.double() * q.double()).reshape(t.shape)


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


def gguf_read(path):
    """A GGUF file's key-values {key: value} and tensors {name: (ggml type, torch shape, raw
    bytes)}, read by the format's specification (ggml's docs/gguf.md)."""
    with open(path, "rb") as f:
        data = f.read()
    at = [0]

    def take(fmt):
        v = struct.unpack_from("<" + fmt, data, at[0])
        at[0] += struct.calcsize("<" + fmt)
        return v[0] if len(v) == 1 else v

    def string():
        n = take("Q")
        s = data[at[0]:at[0] + n].decode()
        at[0] += n
        return s

    scalars = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def value(t):
        if t == _STR:
            return string()
        if t == _ARR:
            et, n = take("I"), take("Q")
            return [value(et) for _ in range(n)]
        return take(scalars[t])

    assert data[:4] == b"GGUF"
    at[0] = 4
    _, n_tensors, n_kv = take("I"), take("Q"), take("Q")
    kvs = {}
    for _ in range(n_kv):
        key = string()
        kvs[key] = value(take("I"))
    infos = []
    for _ in range(n_tensors):
        name, nd = string(), take("I")
        ne = [take("Q") for _ in range(nd)]
        infos.append((name, take("I"), list(reversed(ne)), take("Q")))
    align = kvs.get("general.alignment", 32)
    base = (at[0] + align - 1) // align * align
    sizes = {GGML_F32: 4, GGML_F16: 2, GGML_BF16: 2}
    tensors = {}
    for name, typ, shape, off in infos:
        n = 1
        for d in shape:
            n *= d
        nbytes = n * sizes[typ] if typ in sizes else n // 32 * 34  # Q8_0
        tensors[name] = (typ, shape, data[base + off:base + off + nbytes])
    return kvs, tensors


def gguf_values(typ, shape, raw):
    """A tensor's values (F32, F16, BF16, Q8_0) as float64 [shape]."""
    if typ == GGML_F32:
        t = torch.frombuffer(bytearray(raw), dtype=torch.float32)
    elif typ in (GGML_F16, GGML_BF16):
        t = torch.frombuffer(bytearray(raw), dtype=torch.float16 if typ == GGML_F16 else torch.bfloat16)
    else:
        b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 34)
        d = torch.from_numpy(b[:, :2].copy().view(np.float16).astype(np.float64))
        q = torch.from_numpy(b[:, 2:].copy().view(np.int8).astype(np.float64))
        t = d * q
    return t.double().reshape(shape)

