#!/usr/bin/python3
"""The peers agree with each other, without kiln: the float64 reference's greedy tokens
(reference.py on the Hugging Face folder) equal llama.cpp's (node-llama-cpp on the GGUF
files written from the same weights) for every model, type (F32, F16, Q8_0) and prompt.
That checks the GGUF writer (names, keys, the llama q/k permutation, the vocabulary) and the
reference (Hugging Face's semantics) against llama.cpp, independently of each other's
mistakes only where both would have to err alike.

    check_reference.py --models DIR
Exit 0: equal; 1: a mismatch; 77: skipped (the npm peers are absent).
"""
import peer_checks as pc


def main():
    a = pc.args(need_kiln=False)
    m = pc.manifest(a.models)
    got = pc.llama_cpp_tokens(a.models, m)
    for name, v in m["variants"].items():
        if "Q8_0" not in v["gguf"]:
            pc.check(f"{name} Q8_0", False, "the fixture wrote no Q8_0 file though llama.cpp ran")
        for kind, path in v["gguf"].items():
            for i, (ref, cpp) in enumerate(zip(v["greedy"], got[path])):
                first = next((j for j in range(len(ref)) if ref[j] != cpp[j]), None)
                pc.check(f"{name} {kind} prompt {i}", first is None and len(cpp) == len(ref),
                         f"the reference's {len(ref)} greedy ids (margin {v['margins'][i]:.3f} of the spread) "
                         "equal llama.cpp's" if first is None else
                         f"differ from token {first}: reference {ref[first:first + 6]} llama.cpp {cpp[first:first + 6]}")
    pc.finish()


if __name__ == "__main__":
    main()
