#!/usr/bin/python3
"""A random model of SmolLM2-135M's shape as GGUF files, for decoding benchmarks
(scripts/bench_llamacpp.sh): F16, and Q8_0 through llama.cpp's own quantizer.

    bench_smollm2_gguf.py OUTDIR [--types F16,Q8_0] [--layers N]
writes OUTDIR/smollm2-135m-F16.gguf and OUTDIR/smollm2-135m-Q8_0.gguf.

The shape is HuggingFaceTB/SmolLM2-135M's config.json: LlamaForCausalLM, 30 layers, hidden 576,
9 attention heads over 3 key/value heads (head width 64), intermediate 1536, vocabulary 49152,
tied embeddings, rope_theta 100000, rms_norm_eps 1e-5, context 8192. The files are written by
the peer tests' writer (tests/llama/gguf_file.py: convert_hf_to_gguf.py's keys, names and q/k
permutation; Q8_0 through libggml-base.so's ggml_quantize_chunk, found among the npm peers of
$KILN_NODE_PEERS), so llama.cpp and kiln read what llama.cpp's own tools would have written.

Speed does not depend on the values, but they must stay finite through 30 layers: matrices
N(0, 1 / fan_in), norms 1, on the tests' exact grid (Q8_0 then holds them exactly, which the
writer checks). The vocabulary is the tests' byte-level BPE (256 byte symbols, their merges,
<|endoftext|>) grown by merges of byte pairs to 49152, so both programs accept the file; decoding
feeds token ids, never text. The end-of-text row of the tied head is scaled down, so greedy
decoding never picks it and both programs decode the same number of tokens.
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "llama"))
import gguf_file  # noqa: E402
import models  # noqa: E402
import peers  # noqa: E402

VOCAB = 49152


def config(layers):
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": VOCAB,
            "hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": layers,
            "num_attention_heads": 9, "num_key_value_heads": 3, "hidden_act": "silu",
            "max_position_embeddings": 8192, "rms_norm_eps": 1e-5, "rope_theta": 100000.0,
            "rope_scaling": None, "tie_word_embeddings": True, "bos_token_id": 0, "eos_token_id": VOCAB - 1}


def vocabulary():
    """models.vocabulary()'s byte-level BPE grown to VOCAB tokens: more merges of two byte
    symbols (every token of a BPE vocabulary is a byte or a merge's result), inserted before
    <|endoftext|>, which stays last."""
    tokens, types, merges, _ = models.vocabulary()
    sym, have = models.byte_symbols(), set(merges)
    more = (f"{a} {b}" for a in sym for b in sym if f"{a} {b}" not in have)
    extra = [next(more) for _ in range(VOCAB - len(tokens))]
    grown = tokens[:-1] + [m.replace(" ", "") for m in extra] + tokens[-1:]
    assert len(set(grown)) == VOCAB
    return grown, types[:-1] + [1] * len(extra) + types[-1:], merges + extra, VOCAB - 1


def weights(cfg, seed=135):
    rng = np.random.default_rng(seed)
    C, F, H, KV = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = C // H
    mat = lambda rows, cols: models.exact_grid(rng.standard_normal((rows, cols), np.float32) / np.sqrt(cols))
    ones = np.ones(C, np.float32)
    w = {"model.embed_tokens.weight": mat(VOCAB, C) * np.float32(8.0)}  # rows of unit entries, as models.py's
    w["model.embed_tokens.weight"][VOCAB - 1] *= np.float32(1 / 64)      # end of text never wins
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = ones
        w[p + "self_attn.q_proj.weight"] = mat(H * D, C)
        w[p + "self_attn.k_proj.weight"] = mat(KV * D, C)
        w[p + "self_attn.v_proj.weight"] = mat(KV * D, C)
        w[p + "self_attn.o_proj.weight"] = mat(C, H * D)
        w[p + "post_attention_layernorm.weight"] = ones
        w[p + "mlp.gate_proj.weight"] = mat(F, C)
        w[p + "mlp.up_proj.weight"] = mat(F, C)
        w[p + "mlp.down_proj.weight"] = mat(C, F)
    w["model.norm.weight"] = ones
    return w


def main():
    ap = argparse.ArgumentParser(description="SmolLM2-135M-shaped random GGUF files")
    ap.add_argument("out")
    ap.add_argument("--types", default="F16,Q8_0")
    ap.add_argument("--layers", type=int, default=30)
    a = ap.parse_args()
    types = a.types.split(",")
    quantize = None
    if "Q8_0" in types:
        found = peers.find()
        if not found.get("libggml_base"):
            sys.exit(f"bench_smollm2_gguf: Q8_0 needs libggml-base.so of the npm peers: {found.get('why')}")
        quantize = gguf_file.Q8Quantizer(found["libggml_base"])
    cfg = config(a.layers)
    w = weights(cfg)
    os.makedirs(a.out, exist_ok=True)
    for t in types:
        path = os.path.join(a.out, f"smollm2-135m-{t}.gguf")
        gguf_file.write(path, "smollm2-135m-shaped", cfg, w, t, quantize, vocabulary)  # the tests' BPE, padded
        print(path)


if __name__ == "__main__":
    main()
