#!/usr/bin/python3
"""Decoding matches llama.cpp: for every GGUF file of a fixture and each of its 3 prompts,
    kiln decode --ckpt FILE.gguf --prompt-ids A,B,C --max-new 32 --greedy --print-ids --ignore-eog --backend B
must print llama.cpp's 32 greedy token ids (node-llama-cpp, computed by the fixture). The
fixtures: llama_models (random llama, qwen2, qwen3 models, tied and untied, GQA 4/2 and 4/1,
at F32, F16 and Q8_0: every prompt must match) and llama_kquant_models (llama.cpp's own
Q4_K_M and Q5_K_M files: its manifest's "tolerate" of the 3 prompts per file may differ, as
quantized activations, Q8_K in llama.cpp and float on kiln's Vulkan and OpenCL, may flip a
near tie; each one that does is printed as a note).

    check_decode.py --models DIR --kiln PATH/kiln [--backend cpu|vulkan|opencl]
Exit 0: all equal (within the tolerance); 1: a mismatch beyond it or a kiln error (a refused
file too); 77: skipped (no peers, or the backend cannot open).
"""
import peer_checks as pc

STEPS = 32


def main():
    a = pc.args()
    m = pc.manifest(a.models)
    want = pc.llama_cpp_tokens(a.models, m)
    for name, v in m["variants"].items():
        for kind, path in v["gguf"].items():
            check_file(a, f"{name} {kind}", path, v["prompts"], want[path], m.get("tolerate", 0))
    pc.finish()


def check_file(a, what, path, prompts, want, tolerate):
    """kiln's tokens of each prompt against llama.cpp's; up to tolerate differing ones are notes."""
    differ = []
    for i, prompt in enumerate(prompts):
        rc, out, err = pc.kiln(a, "decode", "--ckpt", path, "--prompt-ids", ",".join(map(str, prompt)),
                               "--max-new", str(STEPS), "--greedy", "--print-ids",
                               "--ignore-eog")  # llama.cpp's tokens go on past EOG too
        if rc:
            pc.check(f"{what} prompt {i}", False, f"kiln decode failed: {err}")
            continue
        got, expect = [int(t) for t in out.split()], want[i]
        first = next((j for j in range(max(len(got), len(expect)))
                      if j >= len(got) or j >= len(expect) or got[j] != expect[j]), None)
        detail = (f"{len(got)} ids equal llama.cpp's" if first is None else
                  f"differs from token {first}: kiln {got[first:first + 6]} llama.cpp {expect[first:first + 6]}")
        if first is not None and len(differ) < tolerate:
            differ.append(i)
            print(f"note {what} prompt {i}: {detail} (one of the {tolerate} prompt(s) per file that may differ)")
            continue
        pc.check(f"{what} prompt {i}", first is None, detail)


if __name__ == "__main__":
    main()
