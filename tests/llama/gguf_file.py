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
A writer of the format, not gguf-py: the tests need only what is here."""
import ctypes
import struct

import numpy as np

import models

FILE_TYPE = {"F32": 0, "F16": 1, "Q8_0": 7}   # llama_ftype: ALL_F32, MOSTLY_F16, MOSTLY_Q8_0
GGML_TYPE = {"F32": 0, "F16": 1, "Q8_0": 8}
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


def permute(w, n_head, n_head_kv):
    """LlamaModel.permute: each head's rows from HF's (first half, second half) order to
    interleaved pairs, so llama.cpp's adjacent-pair rope equals HF's rotate_half."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
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


def _metadata(name, cfg, ftype):
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
    tokens, types, merges, eot = models.vocabulary()
    kv += [_kv("tokenizer.ggml.model", _STR, "gpt2"), _kv("tokenizer.ggml.pre", _STR, PRE),
           _kv("tokenizer.ggml.tokens", _ARR, tokens, _STR), _kv("tokenizer.ggml.token_type", _ARR, types, _I32),
           _kv("tokenizer.ggml.merges", _ARR, merges, _STR),
           _kv("tokenizer.ggml.bos_token_id", _U32, cfg["bos_token_id"]),
           _kv("tokenizer.ggml.eos_token_id", _U32, cfg["eos_token_id"])]
    return kv


def _tensors(cfg, weights, ftype, quantize):
    """[(gguf name, ne, ggml type, bytes)] in convert's order: rope_freqs, then HF's."""
    H, KV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    out = []
    if cfg.get("rope_scaling"):
        f = rope_freqs(cfg, cfg.get("head_dim") or cfg["hidden_size"] // H)
        out.append(("rope_freqs.weight", [f.size], "F32", f.tobytes()))
    for hf, a in weights.items():
        if cfg["model_type"] == "llama" and (".q_proj." in hf or ".k_proj." in hf):
            a = permute(a, H, H if ".q_proj." in hf else KV)
        t = "F32" if a.ndim == 1 else ftype
        raw = quantize(a) if t == "Q8_0" else a.astype("<f4" if t == "F32" else "<f2").tobytes()
        out.append((gguf_name(hf), list(a.shape[::-1]), t, raw))
    return out


def write(path, name, cfg, weights, ftype, quantize=None):
    """The GGUF of a model (cfg: its config.json, weights: HF names) at ftype F32, F16 or Q8_0;
    Q8_0 needs quantize (a Q8Quantizer)."""
    kv = _metadata(name, cfg, ftype)
    tensors = _tensors(cfg, weights, ftype, quantize)
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv)) + b"".join(kv)
    offset, infos = 0, []
    for tname, ne, t, raw in tensors:
        infos.append(_s(tname) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
                     + struct.pack("<IQ", GGML_TYPE[t], offset))
        offset += (len(raw) + ALIGN - 1) // ALIGN * ALIGN
    head += b"".join(infos)
    with open(path, "wb") as f:
        f.write(head + b"\0" * ((-len(head)) % ALIGN))
        for _, _, _, raw in tensors:
            f.write(raw + b"\0" * ((-len(raw)) % ALIGN))
