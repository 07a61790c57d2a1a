"""The random Llama-family models of the peer tests: their table, their weights in Hugging
Face's names and [out, in] layout, and their small byte-level BPE vocabulary.

Every weight is exactly representable in F32, F16, BF16 and Q8_0 alike: within each block of
32 values along a row (Q8_0's block) the values are q * 2^e with integers |q| <= 127 and one
|q| equal to 127. ggml's Q8_0 quantizer then finds d = 2^e and the same q, F16 and BF16 hold
7-bit integers times a power of two exactly, so the F32, F16, BF16 and Q8_0 files of a model
hold the same numbers and one float64 reference serves them all. What is left between the
files is the arithmetic of whoever runs them (llama.cpp rounds activations to f16 or Q8_0).

Decisive greedy choices (large logit gaps relative to the peers' rounding): whatever the
scale, a random model's greedy step is a near tie now and then (the gap between the best two
logits is a random fraction of their spread), and a Q8_0 product (llama.cpp's, kiln's CPU
and Vulkan ones) rounds the activations to 8 bits, which moves the logits by about 1%. So
the scales keep the model calm, where that rounding moves a step's margin least, and the
prompts are chosen:
  - embeddings at 0.3 per entry, q and k at 0.3 / sqrt(fan_in) (attention scores of about a
    unit: the softmax, the most sensitive part, is neither flat nor brittle), v, o and the
    MLP at 0.5 / sqrt(fan_in), norm weights 1 +- 0.2, an untied head at 4 / sqrt(C) (the
    end-of-text row zero, as is the tied one's nearly, so it never wins). Measured with
    select_prompts.Q8Activations: the rounding moves a step's margin by at most about 0.04
    of the logits' spread (99th percentile), where TIED_GAIN's scales move it by 0.10;
  - a tied head at those scales repeats the current token (every prompt tried gave one
    token 32 times), so the tied variants keep TIED_GAIN (embeddings at 0.15, q and k at 0.7,
    v, o and the MLP at 1), noisier: their prompts rest more on the selection below;
  - PROMPTS below: only decisive prompts (select_prompts.py): every one of the 32 greedy
    steps wins by >= 0.06 of the step's logit spread both in the float64 reference and with
    the activations rounded to 8 bits, the same tokens both ways, >= 5 different tokens.
"""
import numpy as np

GAIN = {"embed": 0.3, "qk": 0.3, "vo": 0.5, "mlp": 0.5, "head": 4.0}
# A tied head at GAIN's scales repeats the current token (its own embedding wins): the tied
# variants' layers are stronger and their embeddings smaller.
TIED_GAIN = {"embed": 0.15, "qk": 0.7, "vo": 1.0, "mlp": 1.0}

# name: architecture, width, heads, kv heads, head_dim (None: width / heads, and config.json
# has no head_dim), ffn, tied, rope theta, llama3 rope scaling
VARIANTS = {
    "llama_tied": dict(arch="llama", dim=64, heads=4, kv=2, head_dim=None, ffn=192, tied=True,
                       theta=10000.0, scaling=None, gains=TIED_GAIN),
    "llama_untied": dict(arch="llama", dim=64, heads=4, kv=1, head_dim=None, ffn=160, tied=False,
                         theta=500000.0,
                         # original context 64: the pairs' wavelengths (6, 33, 171, ...) fall in
                         # all three of llama3's bands (kept, smoothed, divided by the factor)
                         scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                  "high_freq_factor": 4.0, "original_max_position_embeddings": 64}),
    "qwen2_tied": dict(arch="qwen2", dim=64, heads=4, kv=2, head_dim=None, ffn=192, tied=True,
                       theta=1000000.0, scaling=None, gains=TIED_GAIN),
    "qwen2_untied": dict(arch="qwen2", dim=128, heads=4, kv=1, head_dim=None, ffn=256, tied=False,
                         theta=10000.0, scaling=None),
    "qwen3_tied": dict(arch="qwen3", dim=64, heads=4, kv=2, head_dim=32, ffn=192, tied=True,
                       theta=1000000.0, scaling=None, gains=TIED_GAIN),
    "qwen3_untied": dict(arch="qwen3", dim=64, heads=4, kv=1, head_dim=16, ffn=128, tied=False,
                         theta=1000000.0, scaling=None),
}
# The K-quant decode checks' models (make_kquant_models.py), quantized by llama.cpp into
# Q4_K_M and Q5_K_M: every row of the first is a multiple of 256 wide (the K formats
# throughout), the second's are 192 wide but for ffn_down's 512 (llama.cpp falls back to
# Q5_0, Q5_1 and Q8_0 there, and keeps K formats for ffn_down). bigram: bigram_head()'s gain,
# in units of the head's (their steps are decisive where random heads' are not).
KQUANT_VARIANTS = {
    "llama_k256": dict(arch="llama", dim=256, heads=4, kv=2, head_dim=None, ffn=768, tied=False,
                       theta=10000.0, scaling=None, bigram=0.4),
    "qwen2_k192": dict(arch="qwen2", dim=192, heads=3, kv=1, head_dim=None, ffn=512, tied=False,
                       theta=1000000.0, scaling=None, bigram=0.7),
}
LAYERS = 2
CONTEXT = 128  # max_position_embeddings
HF_CLASS = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}
NORM_EPS = {"llama": 1e-5, "qwen2": 1e-6, "qwen3": 1e-6}


def byte_symbols():
    """GPT-2's byte-to-unicode table: the printable symbol of each byte in a byte-level BPE."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    out, extra = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + extra)
            extra += 1
    return [out[b] for b in range(256)]


def vocabulary():
    """tokens, token types (1 normal, 3 control), merges and the end-of-text id of a
    byte-level BPE: the 256 byte symbols, 63 merges of two of them, then <|endoftext|>."""
    sym = byte_symbols()
    pairs = ["Ġ t", "h e", "i n", "e r", "a n", "Ġ a", "o n", "r e", "Ġ s", "e n", "a t", "o r",
             "Ġ w", "Ġ o", "i s", "e s", "Ġ b", "Ġ c", "i t", "a r", "Ġ f", "Ġ p", "Ġ m", "a l",
             "l e", "n d", "e d", "o u", "Ġ h", "i c", "a s", "Ġ d", "i o", "s t", "l o", "r o",
             "Ġ l", "Ġ n", "Ġ e", "Ġ i", "l l", "e l", "v e", "c h", "t h", "Ġ g", "s e", "o m",
             "e t", "u r", "i l", "r i", "a c", "o l", "l a", "u n", "Ġ r", "Ġ y", "s h", "c e",
             "Ċ Ċ", "Ġ Ġ", "n g"]
    tokens = sym + [p.replace(" ", "") for p in pairs] + ["<|endoftext|>"]
    assert len(set(tokens)) == len(tokens)
    types = [1] * (len(tokens) - 1) + [3]
    return tokens, types, pairs, len(tokens) - 1


VOCAB = len(vocabulary()[0])  # 320


def tokenizer_json():
    """The same vocabulary as Hugging Face's tokenizer.json: a byte-level BPE with GPT-2's
    pre-tokenizer and decoder, <|endoftext|> an added special token."""
    tokens, _, merges, eot = vocabulary()
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    return {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": [{"id": eot, "content": tokens[eot], "single_word": False, "lstrip": False,
                              "rstrip": False, "normalized": False, "special": True}],
            "normalizer": None, "pre_tokenizer": byte_level, "post_processor": byte_level, "decoder": byte_level,
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                      "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                      "vocab": {t: i for i, t in enumerate(tokens[:eot])}, "merges": merges}}


def variant(name):
    """A model's row of VARIANTS or KQUANT_VARIANTS."""
    return VARIANTS[name] if name in VARIANTS else KQUANT_VARIANTS[name]


def seed(name):
    """The seed of a variant's weights: its place in the table, or its own (SEEDS: where
    select_prompts.py found too few decisive prompts with the first)."""
    return SEEDS[name] if name in SEEDS else 100 + list(VARIANTS).index(name)


SEEDS = {"qwen2_tied": 203, "qwen3_tied": 204, "llama_k256": 301, "qwen2_k192": 302}


def head_dim(v):
    return v["head_dim"] or v["dim"] // v["heads"]


def exact_grid(x):
    """x rounded onto the representable grid described above, block by block of 32 values
    along the last axis (fewer where the axis is shorter)."""
    x = np.asarray(x, np.float64)
    n = x.shape[-1]
    block = min(32, n)
    assert n % block == 0, f"a row of {n} is not whole blocks of {block}"
    b = x.reshape(-1, block)
    amax = np.abs(b).max(axis=1, keepdims=True)
    amax[amax == 0] = 1.0
    q = np.clip(np.round(b / amax * 127.0), -127, 127)
    d = np.exp2(np.round(np.log2(amax / 127.0)))
    out = (q * d).astype(np.float32)
    assert np.all(np.abs(q).max(axis=1) == 127)
    return out.reshape(x.shape)


def config(name):
    """config.json of the variant, with the fields and class Hugging Face writes."""
    v = variant(name)
    c = {"architectures": [HF_CLASS[v["arch"]]], "model_type": v["arch"], "vocab_size": VOCAB,
         "hidden_size": v["dim"], "intermediate_size": v["ffn"], "num_hidden_layers": LAYERS,
         "num_attention_heads": v["heads"], "num_key_value_heads": v["kv"], "hidden_act": "silu",
         "max_position_embeddings": CONTEXT, "rms_norm_eps": NORM_EPS[v["arch"]],
         "rope_theta": v["theta"], "rope_scaling": v["scaling"],
         "tie_word_embeddings": v["tied"], "initializer_range": 0.02, "use_cache": True,
         "bos_token_id": VOCAB - 1, "eos_token_id": VOCAB - 1, "torch_dtype": "float32"}
    if v["arch"] == "llama":
        c.update(attention_bias=False, mlp_bias=False, attention_dropout=0.0, pretraining_tp=1)
    if v["arch"] == "qwen2":
        c.update(use_sliding_window=False, sliding_window=CONTEXT, max_window_layers=LAYERS,
                 attention_dropout=0.0)
    if v["arch"] == "qwen3":
        c.update(head_dim=head_dim(v), attention_bias=False, use_sliding_window=False,
                 sliding_window=None, max_window_layers=LAYERS, attention_dropout=0.0)
    return c


def weights(name, seed):
    """{HF name: float32 array [out, in]} of the variant: random, on the exact grid."""
    v = variant(name)
    rng = np.random.default_rng(seed)
    C, H, KV, D, F = v["dim"], v["heads"], v["kv"], head_dim(v), v["ffn"]
    mat = lambda rows, cols, gain: exact_grid(rng.standard_normal((rows, cols)) * gain / np.sqrt(cols))
    near_one = lambda n: exact_grid(1.0 + 0.2 * rng.standard_normal(n))
    g = dict(GAIN, **v.get("gains", {}))
    w = {"model.embed_tokens.weight": exact_grid(rng.standard_normal((VOCAB, C)) * g["embed"])}
    # the end-of-text token's row is small: it never wins a greedy step (kiln and llama.cpp
    # stop differently there), and its embedding is never fed
    w["model.embed_tokens.weight"][VOCAB - 1] = exact_grid(0.01 * rng.standard_normal(C))
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = near_one(C)
        w[p + "self_attn.q_proj.weight"] = mat(H * D, C, g["qk"])
        w[p + "self_attn.k_proj.weight"] = mat(KV * D, C, g["qk"])
        w[p + "self_attn.v_proj.weight"] = mat(KV * D, C, g["vo"])
        w[p + "self_attn.o_proj.weight"] = mat(C, H * D, g["vo"])
        if v["arch"] == "qwen2":
            for t, n in (("q", H * D), ("k", KV * D), ("v", KV * D)):
                w[p + f"self_attn.{t}_proj.bias"] = exact_grid(0.5 * rng.standard_normal(n))
        if v["arch"] == "qwen3":
            w[p + "self_attn.q_norm.weight"] = near_one(D)
            w[p + "self_attn.k_norm.weight"] = near_one(D)
        w[p + "post_attention_layernorm.weight"] = near_one(C)
        w[p + "mlp.gate_proj.weight"] = mat(F, C, g["mlp"])
        w[p + "mlp.up_proj.weight"] = mat(F, C, g["mlp"])
        w[p + "mlp.down_proj.weight"] = mat(C, F, g["mlp"])
    w["model.norm.weight"] = near_one(C)
    if not v["tied"]:
        w["lm_head.weight"] = mat(VOCAB, C, g["head"])
        w["lm_head.weight"][VOCAB - 1] = 0.0
    if v.get("bigram"):
        w["lm_head.weight"][:VOCAB - 1] = bigram_head(w, rng.permutation(VOCAB - 1), v["bigram"] * g["head"])
    return w


def bigram_head(w, successor, gain):
    """The untied head's rows plus, for each token c, c's embedding (its norm scaled to gain)
    in the row of successor[c]: a trained-ish model whose current token favours one next
    token, which the layers' output (attention over the earlier tokens) can overturn. Random
    heads alone make some greedy step of every 32 a near tie at widths of 192 and more."""
    e = w["model.embed_tokens.weight"][:VOCAB - 1]
    head = w["lm_head.weight"][:VOCAB - 1].astype(np.float64)
    head[successor] += gain * e / np.linalg.norm(e, axis=1, keepdims=True)
    return exact_grid(head)


# The prompts of each variant: select_prompts.py's output, decisive prompts (see there).
PROMPTS = {
    "llama_tied": [[92, 283, 80, 292, 210, 78, 19, 125, 237], [205, 41, 229, 129, 317, 202], [47, 121, 260, 127, 121]],
    "llama_untied": [[20, 198, 119, 166, 193, 63, 15, 165, 304], [239, 188, 243, 49, 72, 225, 58], [112, 227, 108, 314, 155]],
    "qwen2_tied": [[63, 229, 117, 155, 1, 196, 264, 211, 49], [288, 294, 232, 45, 295, 4, 86, 84], [19, 45, 217, 184, 78]],
    "qwen2_untied": [[308, 176, 148, 57, 228, 206, 170, 85, 25], [132, 157, 76, 202, 303, 112, 21], [245, 41, 20, 234, 232, 254, 4]],
    "qwen3_tied": [[80, 247, 63, 60, 316, 190, 91, 143], [252, 279, 90, 96, 49, 40, 88, 282, 215], [209, 232, 136, 25]],
    "qwen3_untied": [[305, 243, 149, 151, 130, 17, 229], [252, 162, 58, 143, 196, 46, 129, 262], [280, 50, 209, 223, 114, 81, 180, 82]],
    # make_kquant_models.py --select 60: decisive for both of llama.cpp's mixes of the model
    "llama_k256": [[15, 57, 120, 282, 309, 204, 186], [256, 9, 289, 39, 132, 308], [257, 216, 215, 98, 228, 43, 200, 293]],
    "qwen2_k192": [[63, 229, 117, 155, 1, 196, 264, 211, 49], [108, 88, 229, 81, 315], [36, 292, 291, 221, 255, 236, 279, 283, 166]],
}
