#!/usr/bin/python3
"""Hugging Face folders (and GGUF files) match PyTorch: every random model of the fixture,
as a folder in F32, F16 and BF16 (the last sharded, through model.safetensors.index.json)
and as a GGUF file in F32 and F16, read by
    kiln dev parity --ckpt FOLDER|FILE.gguf --tokens batch.safetensors --out R --steps 0 --backend B
gives logits within 1e-5 relative (parity_checks.rel_err over all of them) of the float64
reference forward (reference.py) on the same 3 rows of 24 tokens. The weights are exact in
all these types, so the one reference serves each. (Q8_0 is left to check_decode.py: kiln's
quantized product rounds the activations to 8 bits, as llama.cpp's does.)

    check_logits.py --models DIR --kiln PATH/kiln [--backend cpu|vulkan|opencl]
Exit 0: all within; 1: a mismatch or a kiln error (a refused file too); 77: skipped (no fixture
or the backend cannot open).
"""
import os
import tempfile

import hf_folder
import peer_checks as pc

TOLERANCE = 1e-5


def main():
    a = pc.args()
    m = pc.manifest(a.models)
    with tempfile.TemporaryDirectory() as tmp:
        for name, v in m["variants"].items():
            ref = hf_folder.read_safetensors(v["reference"])["logits"]
            files = {f"HF {k}": p for k, p in v["hf"].items()}
            files.update({f"GGUF {k}": p for k, p in v["gguf"].items() if k != "Q8_0"})
            for kind, path in files.items():
                out = os.path.join(tmp, "logits.safetensors")
                rc, _, err = pc.kiln(a, "dev", "parity", "--ckpt", path, "--tokens", v["batch"], "--out", out,
                                     "--steps", "0", trust=False)
                if rc:
                    pc.check(f"{name} {kind}", False, f"kiln dev parity failed: {err}")
                    continue
                e = pc.rel_err(hf_folder.read_safetensors(out)["logits"], ref)
                pc.check(f"{name} {kind} logits", e < TOLERANCE, f"relative error {e:.2e} (tolerance {TOLERANCE})")
    pc.finish()


if __name__ == "__main__":
    main()
