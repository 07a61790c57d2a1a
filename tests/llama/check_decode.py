#!/usr/bin/python3
"""Decoding matches llama.cpp: for every random model of the fixture (llama, qwen2, qwen3;
tied and untied; GQA 4/2 and 4/1) at F32, F16 and Q8_0, and each of its 3 prompts,
    kiln decode --ckpt FILE.gguf --prompt-ids A,B,C --max-new 32 --greedy --print-ids --ignore-eog --backend B
must print llama.cpp's 32 greedy token ids (node-llama-cpp, computed by the fixture).

    check_decode.py --models DIR --kiln PATH/kiln [--backend cpu|vulkan|opencl]
Exit 0: all equal; 1: a mismatch or a kiln error (a refused file too); 77: skipped (no peers,
or the backend cannot open).
"""
import peer_checks as pc

STEPS = 32


def main():
    a = pc.args()
    m = pc.manifest(a.models)
    want = pc.llama_cpp_tokens(a.models, m)
    for name, v in m["variants"].items():
        for kind, path in v["gguf"].items():
            for i, prompt in enumerate(v["prompts"]):
                rc, out, err = pc.kiln(a, "decode", "--ckpt", path, "--prompt-ids", ",".join(map(str, prompt)),
                                       "--max-new", str(STEPS), "--greedy", "--print-ids",
                                       "--ignore-eog")  # llama.cpp's tokens go on past EOG too
                if rc:
                    pc.check(f"{name} {kind} prompt {i}", False, f"kiln decode failed: {err}")
                    continue
                got = [int(t) for t in out.split()]
                expect = want[path][i]
                first = next((j for j in range(max(len(got), len(expect)))
                              if j >= len(got) or j >= len(expect) or got[j] != expect[j]), None)
                pc.check(f"{name} {kind} prompt {i}", first is None,
                         f"{len(got)} ids equal llama.cpp's" if first is None else
                         f"differs from token {first}: kiln {got[first:first + 6]} llama.cpp {expect[first:first + 6]}")
    pc.finish()


if __name__ == "__main__":
    main()
