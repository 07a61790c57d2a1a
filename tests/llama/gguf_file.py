"""GGUF files of the random models, with the keys, tensor names, layouts and types that
llama.cpp's convert_hf_to_gguf.py writes (conversion/base.py, conversion/llama.py,
conversion/qwen.py, gguf-py/gguf/constants.py of node-llama-cpp's bundled llama.cpp):
  - {arch}.* hyperparameters as unsigned 32-bit integers and 32-bit floats; llama adds
    vocab_size and rope.dimension_count, a config with head_dim adds attention.key_length and
    value_length; llama3 rope scaling becomes the rope_freqs.weight tensor of frequency
    factors (LlamaModel.generate_extra_tensors);
  - HF's tensors renamed (token_embd, blk.N.attn_q, ..., output), [out, in] stored as
    ne = [in, out]; the llama architecture's q and k rows permuted (LlamaModel.permute) for
    llama.cpp's adjacent-pair rope; a tied model has no output.weight;
  - --outtype f32 / f16 / q8_0: 1-D tensors stay F32, the matrices become F16 or Q8_0, Q8_0
    through libggml-base.so's ggml_quantize_chunk (ctypes; the bytes are checked to
    dequantize to the same weights, which models.py makes exact);
  - tokenizer.ggml.*: model "gpt2", pre, tokens, token_type, merges, bos/eos ids.
Also the format's pieces that io_checks.py and io_export_checks.py use on their own models:
write_file() (version 3, alignment 32), a reader (read(), values()) by ggml's docs/gguf.md,
and Q8_0 blocks as ggml's reference quantizer makes them without the peers (q8_0()).
A writer of the format, not gguf-py: the tests need only what is here."""
import ctypes
import struct

import numpy as np
import torch

import models

FILE_TYPE = {"F32": 0, "F16": 1, "Q8_0": 7}   # llama_ftype: ALL_F32, MOSTLY_F16, MOSTLY_Q8_0
GGML_TYPE = {"F32": 0, "F16": 1, "Q8_0": 8, "BF16": 30}
GGML_F32, GGML_F16, GGML_Q8_0, GGML_BF16 = (GGML_TYPE[t] for t in ("F32", "F16", "Q8_0", "BF16"))
# ggml type: (name, values per block, bytes per block) of ggml-common.h's block formats
GGML_BLOCKS = {2: ("q4_0", 32, 18), 3: ("q4_1", 32, 20), 6: ("q5_0", 32, 22), 7: ("q5_1", 32, 24),
               8: ("q8_0", 32, 34), 12: ("q4_K", 256, 144), 13: ("q5_K", 256, 176), 14: ("q6_K", 256, 210)}
ALIGN = 32
PRE = "gpt-2"  # llama.cpp's name of GPT-2's pre-tokenizer, the one models.tokenizer_json() has

_U32, _I32, _F32, _BOOL, _STR, _ARR = 4, 5, 6, 7, 8, 9


def _s(text):
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def _value(kind, v):
    if kind == _U32:
        return struct.pack("<I", v)
    if kind == _I32:
        return struct.pack("<i", v)
    if kind == _F32:
        return struct.pack("<f", v)
    if kind == _BOOL:
        return struct.pack("<B", 1 if v else 0)
    if kind == _STR:
        return _s(v)
    raise ValueError(kind)


def _kv(key, kind, v, elem=None):
    out = _s(key) + struct.pack("<I", kind)
    if kind == _ARR:
        return out + struct.pack("<IQ", elem, len(v)) + b"".join(_value(elem, e) for e in v)
    return out + _value(kind, v)


def kvs(pairs):
    """[(key, value)] as key-values: str, int (u32), float (f32) or a list of str."""
    kind = lambda v: _STR if isinstance(v, str) else _F32 if isinstance(v, float) else _U32  # noqa: E731
    return [_kv(k, _ARR, v, _STR) if isinstance(v, list) else _kv(k, kind(v), v) for k, v in pairs]


def write_file(path, kv, tensors):
    """kv: key-values (_kv, kvs()); tensors: [(name, ggml type, shape [out, in], bytes)],
    stored as ne = the shape reversed, each at a multiple of ALIGN."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv)) + b"".join(kv)
    offset = 0
    for name, typ, shape, raw in tensors:
        ne = shape[::-1]
        head += _s(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne) \
            + struct.pack("<IQ", typ, offset)
        offset += (len(raw) + ALIGN - 1) // ALIGN * ALIGN
    with open(path, "wb") as f:
        f.write(head + b"\0" * ((-len(head)) % ALIGN))
        for _, _, _, raw in tensors:
            f.write(raw + b"\0" * ((-len(raw)) % ALIGN))


def gguf_name(hf):
    """convert_hf_to_gguf.py's name of an HF tensor (gguf-py's tensor_mapping)."""
    fixed = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    if hf in fixed:
        return fixed[hf]
    parts = hf.split(".")  # model.layers.N.<module...>.<weight|bias>
    n, module, kind = parts[2], ".".join(parts[3:-1]), parts[-1]
    name = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
            "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
            "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
            "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate",
            "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}[module]
    return f"blk.{n}.{name}.{kind}"


def permute(w, n_head):
    """LlamaModel.permute of q or k rows (n_head: that tensor's heads, the KV heads for k):
    each head's rows from HF's (first half, second half) order to interleaved pairs, so
    llama.cpp's adjacent-pair rope equals HF's rotate_half. numpy or torch."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def rope_freqs(cfg, dim):
    """LlamaModel.generate_extra_tensors: llama3 scaling's frequency factors, float32."""
    s = cfg["rope_scaling"]
    base = cfg["rope_theta"]
    freqs = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float32) / dim))
    low_wl = s["original_max_position_embeddings"] / s["low_freq_factor"]
    high_wl = s["original_max_position_embeddings"] / s["high_freq_factor"]
    out = []
    for f in freqs:
        wl = 2 * np.pi / f
        if wl < high_wl:
            out.append(1.0)
        elif wl > low_wl:
            out.append(s["factor"])
        else:
            smooth = (s["original_max_position_embeddings"] / wl - s["low_freq_factor"]) / (
                s["high_freq_factor"] - s["low_freq_factor"])
            out.append(1 / ((1 - smooth) / s["factor"] + smooth))
    return np.array(out, np.float32)


class Q8Quantizer:
    """ggml_quantize_chunk(GGML_TYPE_Q8_0) of libggml-base.so, checked by dequantize_row_q8_0."""

    def __init__(self, libggml_base):
        self.lib = ctypes.CDLL(libggml_base)
        self.lib.ggml_quantize_chunk.restype = ctypes.c_size_t
        self.lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                                 ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
        self.lib.dequantize_row_q8_0.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]

    def __call__(self, a):
        a = np.ascontiguousarray(a, np.float32)
        rows, n = a.shape
        out = np.zeros(rows * n // 32 * 34, np.uint8)
        size = self.lib.ggml_quantize_chunk(GGML_TYPE["Q8_0"], a.ctypes.data, out.ctypes.data, 0, rows, n, None)
        assert size == out.size, f"ggml_quantize_chunk wrote {size} bytes, not {out.size}"
        back = np.zeros(a.size, np.float32)
        self.lib.dequantize_row_q8_0(out.ctypes.data, back.ctypes.data, a.size)
        assert np.array_equal(back.reshape(a.shape), a), "Q8_0 does not hold the weights exactly"
        return out.tobytes()


def _metadata(name, cfg, ftype, vocabulary):
    arch = cfg["model_type"]
    D = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    kv = [_kv("general.architecture", _STR, arch), _kv("general.type", _STR, "model"),
          _kv("general.name", _STR, f"kiln peer test {name}"),
          _kv(f"{arch}.block_count", _U32, cfg["num_hidden_layers"]),
          _kv(f"{arch}.context_length", _U32, cfg["max_position_embeddings"]),
          _kv(f"{arch}.embedding_length", _U32, cfg["hidden_size"]),
          _kv(f"{arch}.feed_forward_length", _U32, cfg["intermediate_size"]),
          _kv(f"{arch}.attention.head_count", _U32, cfg["num_attention_heads"]),
          _kv(f"{arch}.attention.head_count_kv", _U32, cfg["num_key_value_heads"]),
          _kv(f"{arch}.rope.freq_base", _F32, cfg["rope_theta"]),
          _kv(f"{arch}.attention.layer_norm_rms_epsilon", _F32, cfg["rms_norm_eps"])]
    if "head_dim" in cfg:
        kv += [_kv(f"{arch}.attention.key_length", _U32, D), _kv(f"{arch}.attention.value_length", _U32, D)]
    kv.append(_kv("general.file_type", _U32, FILE_TYPE[ftype]))
    if arch == "llama":
        kv += [_kv("llama.vocab_size", _U32, cfg["vocab_size"]), _kv("llama.rope.dimension_count", _U32, D)]
    kv.append(_kv("general.quantization_version", _U32, 2))
    tokens, types, merges, eot = vocabulary()
    kv += [_kv("tokenizer.ggml.model", _STR, "gpt2"), _kv("tokenizer.ggml.pre", _STR, PRE),
           _kv("tokenizer.ggml.tokens", _ARR, tokens, _STR), _kv("tokenizer.ggml.token_type", _ARR, types, _I32),
           _kv("tokenizer.ggml.merges", _ARR, merges, _STR),
           _kv("tokenizer.ggml.bos_token_id", _U32, cfg["bos_token_id"]),
           _kv("tokenizer.ggml.eos_token_id", _U32, cfg["eos_token_id"])]
    return kv


def _tensors(cfg, weights, ftype, quantize):
    """[(gguf name, ggml type, shape, bytes)] in convert's order: rope_freqs, then HF's."""
    H, KV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    out = []
    if cfg.get("rope_scaling"):
        f = rope_freqs(cfg, cfg.get("head_dim") or cfg["hidden_size"] // H)
        out.append(("rope_freqs.weight", GGML_F32, [f.size], f.tobytes()))
    for hf, a in weights.items():
        if cfg["model_type"] == "llama" and (".q_proj." in hf or ".k_proj." in hf):
            a = permute(a, H if ".q_proj." in hf else KV)
        t = "F32" if a.ndim == 1 else ftype
        raw = quantize(a) if t == "Q8_0" else a.astype("<f4" if t == "F32" else "<f2").tobytes()
        out.append((gguf_name(hf), GGML_TYPE[t], list(a.shape), raw))
    return out


def write(path, name, cfg, weights, ftype, quantize=None, vocabulary=models.vocabulary):
    """The GGUF of a model (cfg: its config.json, weights: HF names) at ftype F32, F16 or Q8_0;
    Q8_0 needs quantize (a Q8Quantizer). vocabulary() gives (tokens, types, merges, eot): the
    tests' byte-level BPE unless a caller's model has another."""
    write_file(path, _metadata(name, cfg, ftype, vocabulary), _tensors(cfg, weights, ftype, quantize))


class Dequantizer:
    """libggml-base.so's dequantize_row_<type> of every block type in GGML_BLOCKS: a quantized
    tensor's values as llama.cpp reads them (float32, as float64 [shape])."""

    def __init__(self, libggml_base):
        self.lib = ctypes.CDLL(libggml_base)
        for name, _, _ in GGML_BLOCKS.values():
            getattr(self.lib, f"dequantize_row_{name}").argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]

    def __call__(self, typ, shape, raw):
        if typ not in GGML_BLOCKS:
            return values(typ, shape, raw)
        n = int(np.prod(shape))
        src = np.frombuffer(raw, np.uint8).copy()
        out = np.zeros(n, np.float32)
        getattr(self.lib, f"dequantize_row_{GGML_BLOCKS[typ][0]}")(src.ctypes.data, out.ctypes.data, n)
        return torch.from_numpy(out.astype(np.float64)).reshape(shape)


# ---- without the peers: ggml's reference Q8_0, and a reader ----

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
    """(bytes, the values the file holds as float64) of torch tensor t as ggml_type."""
    if ggml_type == GGML_Q8_0:
        return q8_0(t)
    dtype = {GGML_F32: torch.float32, GGML_F16: torch.float16, GGML_BF16: torch.bfloat16}[ggml_type]
    held = t.detach().to(dtype)
    return held.contiguous().view(torch.uint8).numpy().tobytes(), held.double()


def read(path):
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
        nbytes = n * sizes[typ] if typ in sizes else n // GGML_BLOCKS[typ][1] * GGML_BLOCKS[typ][2]
        tensors[name] = (typ, shape, data[base + off:base + off + nbytes])
    return kvs, tensors


def values(typ, shape, raw):
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

