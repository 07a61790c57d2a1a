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
logits is a random fraction of their spread), and llama.cpp's Q8_0 product rounds the
activations to 8 bits, about 1% of that spread. So the scales keep the model calm (a small
change of the activations does not grow through the layers) and the prompts are chosen:
  - embeddings at 0.15 per entry: small next to the layers' outputs, so a tied head does
    not just repeat the current token; the layers decide the tokens, and the test sees them;
  - q and k at 0.7 / sqrt(fan_in): attention scores of a few units, softmax neither flat nor
    brittle; v, o and the MLP at 1 / sqrt(fan_in); norm weights 1 +- 0.2;
  - an untied head at 4 / sqrt(C) (the end-of-text row zero, as is the tied one's nearly);
  - PROMPTS below: only prompts whose every one of the 32 greedy steps wins by >= 0.06 of the
    step's logit spread in the float64 reference, with >= 5 different tokens generated
    (select_prompts.py; 1 to 4% of random prompts qualify). In 240 trial runs of random
    prompts (these scales, embeddings at 1) llama.cpp's Q8_0 parted from the reference only
    at steps won by less than 0.055 of the spread.
"""
import numpy as np

# name: architecture, width, heads, kv heads, head_dim (None: width / heads, and config.json
# has no head_dim), ffn, tied, rope theta, llama3 rope scaling
VARIANTS = {
    "llama_tied": dict(arch="llama", dim=64, heads=4, kv=2, head_dim=None, ffn=192, tied=True,
                       theta=10000.0, scaling=None),
    "llama_untied": dict(arch="llama", dim=64, heads=4, kv=1, head_dim=None, ffn=160, tied=False,
                         theta=500000.0,
                         # original context 64: the pairs' wavelengths (6, 33, 171, ...) fall in
                         # all three of llama3's bands (kept, smoothed, divided by the factor)
                         scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                  "high_freq_factor": 4.0, "original_max_position_embeddings": 64}),
    "qwen2_tied": dict(arch="qwen2", dim=64, heads=4, kv=2, head_dim=None, ffn=192, tied=True,
                       theta=1000000.0, scaling=None),
    "qwen2_untied": dict(arch="qwen2", dim=128, heads=4, kv=1, head_dim=None, ffn=256, tied=False,
                         theta=10000.0, scaling=None),
    "qwen3_tied": dict(arch="qwen3", dim=64, heads=4, kv=2, head_dim=32, ffn=192, tied=True,
                       theta=1000000.0, scaling=None),
    "qwen3_untied": dict(arch="qwen3", dim=64, heads=4, kv=1, head_dim=16, ffn=128, tied=False,
                         theta=1000000.0, scaling=None),
}
LAYERS = 2
CONTEXT = 128  # max_position_embeddings
HF_CLASS = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}
NORM_EPS = {"llama": 1e-5, "qwen2": 1e-6, "qwen3": 1e-6}
GAIN = {"embed": 0.15, "qk": 0.7, "vo": 1.0, "mlp": 1.0, "head": 4.0}


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


def seed(name):
    """The seed of a variant's weights: its place in the table, or its own (SEEDS: where
    select_prompts.py found too few decisive prompts with the first)."""
    return SEEDS.get(name, 100 + list(VARIANTS).index(name))


SEEDS = {"qwen2_untied": 201}


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
    v = VARIANTS[name]
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
    v = VARIANTS[name]
    rng = np.random.default_rng(seed)
    C, H, KV, D, F = v["dim"], v["heads"], v["kv"], head_dim(v), v["ffn"]
    mat = lambda rows, cols, gain: exact_grid(rng.standard_normal((rows, cols)) * gain / np.sqrt(cols))
    near_one = lambda n: exact_grid(1.0 + 0.2 * rng.standard_normal(n))
    w = {"model.embed_tokens.weight": exact_grid(rng.standard_normal((VOCAB, C)) * GAIN["embed"])}
    # the end-of-text token's row is small: it never wins a greedy step (kiln and llama.cpp
    # stop differently there), and its embedding is never fed
    w["model.embed_tokens.weight"][VOCAB - 1] = exact_grid(0.01 * rng.standard_normal(C))
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = near_one(C)
        w[p + "self_attn.q_proj.weight"] = mat(H * D, C, GAIN["qk"])
        w[p + "self_attn.k_proj.weight"] = mat(KV * D, C, GAIN["qk"])
        w[p + "self_attn.v_proj.weight"] = mat(KV * D, C, GAIN["vo"])
        w[p + "self_attn.o_proj.weight"] = mat(C, H * D, GAIN["vo"])
        if v["arch"] == "qwen2":
            for t, n in (("q", H * D), ("k", KV * D), ("v", KV * D)):
                w[p + f"self_attn.{t}_proj.bias"] = exact_grid(0.5 * rng.standard_normal(n))
        if v["arch"] == "qwen3":
            w[p + "self_attn.q_norm.weight"] = near_one(D)
            w[p + "self_attn.k_norm.weight"] = near_one(D)
        w[p + "post_attention_layernorm.weight"] = near_one(C)
        w[p + "mlp.gate_proj.weight"] = mat(F, C, GAIN["mlp"])
        w[p + "mlp.up_proj.weight"] = mat(F, C, GAIN["mlp"])
        w[p + "mlp.down_proj.weight"] = mat(C, F, GAIN["mlp"])
    w["model.norm.weight"] = near_one(C)
    if not v["tied"]:
        w["lm_head.weight"] = mat(VOCAB, C, GAIN["head"])
        w["lm_head.weight"][VOCAB - 1] = 0.0
    return w


# The prompts of each variant (select_prompts.py's output): every one of their 32 greedy
# steps in the float64 reference wins by >= 0.06 of the step's logit spread, with >= 5
# different tokens in the continuation.
PROMPTS = {
    "llama_tied": [[48, 56, 26, 22], [294, 93, 228, 241, 299, 202, 64, 236, 54], [178, 309, 98, 64]],
    "llama_untied": [[178, 40, 109, 40, 35], [276, 225, 162, 231, 254, 186, 140, 182], [42, 308, 60, 275, 186, 79, 134, 36]],
    "qwen2_tied": [[170, 263, 271, 215, 106, 118, 231, 20], [204, 228, 153, 148, 190, 131], [106, 212, 75, 102, 4, 209, 188, 26]],
    "qwen2_untied": [[23, 156, 22, 45, 122, 140], [44, 48, 19, 265, 240, 13, 180, 149], [36, 292, 291, 221, 255, 236, 279, 283, 166]],
    "qwen3_tied": [[204, 13, 236, 151, 29, 77, 172, 231], [118, 127, 299, 209, 129, 238, 119, 69], [141, 140, 179, 93]],
    "qwen3_untied": [[257, 216, 215, 98, 228, 43, 200, 293], [106, 212, 75, 102, 4, 209, 188, 26], [107, 50, 263, 255]],
}
