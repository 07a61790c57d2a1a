#!/usr/bin/python3
"""kiln's exports of the Llama family read back in the peers, for every random model of the
fixture:
  - `kiln export --ckpt hf-F32 --format hf --out DIR`: DIR holds config.json with the
    model's class, sizes and rope scaling (Llama 3.x's rope_scaling; floats to 1e-6), and
    every tensor of Hugging Face's names with the very values of the model (its weights are
    exact in every type kiln may choose), so the float64 reference reading DIR gives the
    reference's logits to 1e-9 (rms_norm_eps through float32 moves them by 1e-11);
  - `kiln export --ckpt hf-F32 --format gguf --type f32|f16|q8_0 --out FILE.gguf`: llama.cpp
    (node-llama-cpp) decodes FILE greedily to the tokens it gives the fixture's file of that
    type, on the 3 prompts x 32 tokens.

    check_export.py --models DIR --kiln PATH/kiln --work DIR
Exit 0: all equal; 1: a mismatch or a kiln error (a refusal too); 77: skipped (the npm peers
are absent for the GGUF half; the HF half has run and passed).
"""
import os

import numpy as np
import torch

import hf_folder
import models
import peer_checks as pc
import peers
import reference

CONFIG_KEYS = ("architectures", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
               "num_key_value_heads", "vocab_size")
CONFIG_FLOATS = ("rms_norm_eps", "rope_theta")  # kiln holds them as float32


def config_differences(cfg, want):
    """The keys of config.json that do not say what the model's (want) do."""
    bad = [k for k in CONFIG_KEYS if cfg.get(k) != want[k]]
    bad += [k for k in CONFIG_FLOATS if not isinstance(cfg.get(k), (int, float)) or abs(cfg[k] - want[k]) > 1e-6 * want[k]]
    if want.get("head_dim") and cfg.get("head_dim") != want["head_dim"]:
        bad.append("head_dim")
    s, w = cfg.get("rope_scaling") or {}, want.get("rope_scaling") or {}
    if set(s) - {"type"} != set(w) or any(abs(s[k] - v) > 1e-6 * abs(v) if isinstance(v, float) else s[k] != v
                                          for k, v in w.items()):
        bad.append("rope_scaling")
    if bool(cfg.get("tie_word_embeddings")) != want["tie_word_embeddings"]:
        bad.append("tie_word_embeddings")
    return bad


def check_hf(a, name, v):
    out = os.path.join(a.work, f"{name}-hf")
    if pc.kiln_ok(a, f"{name}: export --format hf", "export", "--ckpt", v["hf"]["F32"], "--format", "hf",
                  "--out", out) is None:
        return
    cfg, got = hf_folder.read(out)
    bad = config_differences(cfg, models.config(name))
    pc.check(f"{name}: exported config.json", not bad, f"differs in {bad}" if bad else "the model's class and sizes")
    want = models.weights(name, models.seed(name))
    names = set(want)
    diff = sorted(n for n in names if n not in got or got[n].shape != want[n].shape or not np.array_equal(got[n], want[n]))
    extra = sorted(set(got) - names - {"lm_head.weight"})
    pc.check(f"{name}: exported tensors", not diff and not extra,
             f"all {len(names)} equal the model's" if not diff and not extra else f"differ: {diff[:4]}, unexpected: {extra[:4]}")
    if not bad and not diff:
        batch = hf_folder.read_safetensors(v["batch"])["tokens"][0]
        logits = reference.Reference(out).logits(torch.from_numpy(batch[:, :-1])).numpy()
        e = pc.rel_err(logits, hf_folder.read_safetensors(v["reference"])["logits"])
        pc.check(f"{name}: the reference reads the export", e < 1e-9, f"relative error {e:.1e}")


def check_gguf(a, name, v, jobs):
    for kind in ("F32", "F16", "Q8_0"):
        out = os.path.join(a.work, f"{name}-{kind}.gguf")
        if pc.kiln_ok(a, f"{name}: export --format gguf --type {kind.lower()}", "export", "--ckpt", v["hf"]["F32"],
                      "--format", "gguf", "--type", kind.lower(), "--out", out) is None:
            continue
        if kind in v["gguf"]:  # the fixture makes Q8_0 with the peers' ggml only
            jobs.append({"model": out, "prompts": v["prompts"], "n": 32, "want": v["gguf"][kind]})


def decode_exports(a, m, jobs):
    """llama.cpp's tokens of kiln's GGUF exports against its tokens of the fixture's files;
    the reason it cannot run, or None."""
    found = m["peers"]
    if not os.path.exists(os.path.join(a.models, "llama_cpp.json")) or not found.get("node_llama_cpp"):
        return found.get("why", "the fixture did not run node-llama-cpp")
    want = pc.llama_cpp_tokens(a.models, m)
    got, err = peers.llama_cpp_greedy(found, jobs, a.work)
    if err:
        pc.check("llama.cpp loads kiln's GGUF exports", False, err)
        return None
    for job in jobs:
        same = got[job["model"]] == want[job["want"]]
        pc.check(f"llama.cpp decodes {os.path.basename(job['model'])}", same,
                 "to the tokens of the fixture's file (3 prompts x 32)" if same else
                 f"differently: {got[job['model']][0][:8]} where the fixture's file gives {want[job['want']][0][:8]}")
    return None


def main():
    a = pc.args()
    if not a.work:
        pc.skip("check_export.py needs --work DIR")
    torch.set_num_threads(1)
    m = pc.manifest(a.models)
    jobs = []
    for name, v in m["variants"].items():
        check_hf(a, name, v)
        check_gguf(a, name, v, jobs)
    why = decode_exports(a, m, jobs) if jobs else None
    if why and not pc.failures:
        pc.skip(f"llama.cpp cannot decode kiln's GGUF exports here: {why} (the Hugging Face half passed)")
    pc.finish()


if __name__ == "__main__":
    main()
