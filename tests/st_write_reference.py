#!/usr/bin/python3
"""Cross-checks kiln's safetensors code against the format as the Python library writes it.

The `safetensors` package is not installed here, so this script writes and reads the
bytes itself, following the reference implementation (safetensors/src/tensor.rs):
  - 8-byte little-endian header length, then the JSON header, then the data;
  - "__metadata__" first, then the tensors sorted by dtype (widest first, in the library's
    enum order) and then by name, with data in that same order;
  - the header padded with spaces to a multiple of 8 bytes.

  st_write_reference.py write FILE   writes the file test_host_safetensors --reference reads
  st_write_reference.py check FILE   verifies a file written by
                                     test_host_safetensors --write-for-python
Exit status 0 on success. Needs numpy (Debian's /usr/bin/python3 has it).
"""
import json
import struct
import sys

import numpy as np

# The library's dtype enum order (tensor.rs `Dtype`), used for its sort.
DTYPE_ORDER = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32",
               "U32", "F32", "F64", "I64", "U64"]
NUMPY = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "I64": "<i8", "I32": "<i4", "U8": "u1"}


def bf16_bytes(values):
    """bf16 is the top 16 bits of an f32 (these values are exact in bf16)."""
    bits = np.asarray(values, dtype="<f4").view("<u4") >> 16
    return bits.astype("<u2").tobytes()


def write(path):
    # keep in sync with check_reference() in tests/test_host_safetensors.c
    tensors = {
        "wte.weight": ("F32", [3, 4], (np.arange(12, dtype="<f4") * 0.5 - 1.0).tobytes()),
        "h.0.ln_1.weight": ("F16", [4], (np.arange(4, dtype="<f2") * 0.25).tobytes()),
        "bf": ("BF16", [2], bf16_bytes([1.0, -3.0])),
        "d": ("F64", [], np.array([0.5], dtype="<f8").tobytes()),
        "ids": ("I64", [3], np.array([7, -1, 50256], dtype="<i8").tobytes()),
    }
    order = sorted(tensors, key=lambda n: (-DTYPE_ORDER.index(tensors[n][0]), n))
    header = {"__metadata__": {"format": "pt", "n_layer": "1"}}
    data = b""
    for name in order:
        dtype, shape, raw = tensors[name]
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)
    print(f"{path}: wrote {len(order)} tensors in order {order}")
    return 0


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    return 1


def check(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    if n % 8 != 0:
        return fail(f"header length {n} is not a multiple of 8")
    raw_header = blob[8:8 + n]
    if not raw_header.startswith(b"{"):
        return fail("header does not start with '{'")
    # the library rejects duplicate keys; so do we
    pairs_seen = []
    header = json.loads(raw_header.decode("utf-8"),
                        object_pairs_hook=lambda pairs: pairs_seen.append(pairs) or dict(pairs))
    for pairs in pairs_seen:
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            return fail(f"duplicate keys {keys}")
    data = blob[8 + n:]
    meta = header.pop("__metadata__", {})
    if meta != {"n_embd": "3", "quote": "a\"b\\c\n\u00e9"}:
        return fail(f"metadata {meta}")
    if list(header) != ["transformer.wpe.weight", "half", "ids"]:
        return fail(f"tensor order {list(header)}")
    # the byte ranges must tile the data section exactly
    spans = sorted(tuple(v["data_offsets"]) for v in header.values())
    pos = 0
    for b, e in spans:
        if b != pos:
            return fail(f"data offsets {spans} do not tile the data")
        pos = e
    if pos != len(data):
        return fail(f"tensors cover {pos} bytes, data section has {len(data)}")
    expect = {
        "transformer.wpe.weight": ("F32", [2, 3], [1, -2, 3.5, 0, np.float32(1e-3), 65504]),
        "half": ("F16", [3], [1.0, -0.5, 2048.0]),
        "ids": ("I32", [4], [0, 1, -5, 2147483647]),
    }
    for name, (dtype, shape, values) in expect.items():
        info = header[name]
        if info["dtype"] != dtype or info["shape"] != shape:
            return fail(f"{name}: {info}")
        b, e = info["data_offsets"]
        got = np.frombuffer(data[b:e], dtype=NUMPY[dtype]).reshape(shape)
        want = np.array(values, dtype=NUMPY[dtype]).reshape(shape)
        if not np.array_equal(got, want):
            return fail(f"{name}: {got} != {want}")
    try:  # the same bytes as torch tensors, when torch is present
        import torch
        t = torch.frombuffer(bytearray(data[slice(*header["half"]["data_offsets"])]),
                             dtype=torch.float16)
        if t.tolist() != [1.0, -0.5, 2048.0]:
            return fail(f"torch reads half as {t.tolist()}")
    except ImportError:
        pass
    print(f"{path}: layout and values as the Python library expects")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "check"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(write(sys.argv[2]) if sys.argv[1] == "write" else check(sys.argv[2]))
