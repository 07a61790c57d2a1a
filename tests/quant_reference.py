#!/usr/bin/python3
"""ggml's own quantizers and dequantizers (node-llama-cpp 3.21.1's libggml-base.so, llama.cpp
80fb11a, found under $KILN_NODE_PEERS), for kiln's block formats (kiln/quant.h).

  quant_reference.py           rows and what ggml makes of them, for
                               `test_quant --ggml-reference FILE` (tests/op_references.cmake)
  quant_reference.py --golden  the C strings pasted into tests/test_quant.c, so that a
                               machine without the peer still checks ggml's bytes (and a
                               hash of its to_float values)

ggml_quantize_chunk (imatrix NULL: the reference quantizers quantize_row_*_ref) quantizes
every format but Q8_K, which it has no case for: Q8_K comes from quantize_row_q8_K_ref. The
dequantized values are the type's to_float (ggml_get_type_traits(type)->to_float; Q8_K's
traits have none: dequantize_row_q8_K) applied to ggml's bytes. Reference file, one case per
three lines after its header:

  case FORMAT N LABEL
  x HEX    the N inputs, f32 little-endian
  q HEX    ggml's bytes
  y HEX    ggml's to_float of those bytes, f32

Exits 77 with one line when the peer is not there."""
import ctypes
import os
import random
import struct
import sys

# kiln's name, ggml's type number, block values, block bytes
FORMATS = [("q8_0", 8, 32, 34), ("q4_0", 2, 32, 18), ("q4_1", 3, 32, 20), ("q5_0", 6, 32, 22),
           ("q5_1", 7, 32, 24), ("q4_k", 12, 256, 144), ("q5_k", 13, 256, 176), ("q6_k", 14, 256, 210),
           ("q8_k", 15, 256, 292)]
QK_K = 256


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def load():
    peers = os.environ.get("KILN_NODE_PEERS", "")
    path = os.path.join(peers, "node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64",
                        "libggml-base.so")
    if not peers or not os.path.exists(path):
        print("skipping: llama.cpp's libggml-base.so not found (set KILN_NODE_PEERS to a folder holding "
              "node_modules/@node-llama-cpp/linux-x64)", file=sys.stderr)
        sys.exit(77)
    return ctypes.CDLL(path)


class TypeTraits(ctypes.Structure):
    _fields_ = [("type_name", ctypes.c_char_p), ("blck_size", ctypes.c_int64),
                ("blck_size_interleave", ctypes.c_int64), ("type_size", ctypes.c_size_t),
                ("is_quantized", ctypes.c_bool), ("to_float", ctypes.c_void_p),
                ("from_float_ref", ctypes.c_void_p)]


TO_FLOAT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(ctypes.c_float), ctypes.c_int64)


class Ggml:
    def __init__(self, lib):
        self.lib = lib
        lib.ggml_quantize_chunk.restype = ctypes.c_size_t
        lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                            ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
        lib.quantize_row_q8_K_ref.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
        lib.ggml_get_type_traits.restype = ctypes.POINTER(TypeTraits)
        lib.ggml_get_type_traits.argtypes = [ctypes.c_int]

    def quantize(self, fmt, x):
        name, gtype, values, block = fmt
        n = len(x)
        src = (ctypes.c_float * n)(*x)
        out = (ctypes.c_uint8 * (n // values * block))()  # zeroed: Q8_K's all-zero blocks skip bsums
        if name == "q8_k":
            self.lib.quantize_row_q8_K_ref(src, out, n)
        else:
            written = self.lib.ggml_quantize_chunk(gtype, src, out, 0, 1, n, None)
            assert written == len(out), (name, written, len(out))
        return bytes(out)

    def dequantize(self, fmt, q, n):
        traits = self.lib.ggml_get_type_traits(fmt[1]).contents
        assert traits.type_size == fmt[3] and traits.blck_size == fmt[2], fmt
        # Q8_K's traits have no to_float: its dequantize_row_q8_K, which is exported
        to_float = TO_FLOAT(traits.to_float or ctypes.cast(self.lib.dequantize_row_q8_K, ctypes.c_void_p).value)
        buf = (ctypes.c_uint8 * len(q)).from_buffer_copy(q)
        y = (ctypes.c_float * n)()
        to_float(ctypes.addressof(buf), y, n)
        return list(y)


def golden_inputs():
    """The rows of test_quant.c's quant_inputs(), value for value (float32 arithmetic
    through struct round trips): an LCG's values at three scales, then blocks that test
    the rules' edges. 320 values; the K formats take the first 256."""
    state = 12345
    values = []
    for i in range(6 * 32):
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
        u = f32(state / 2147483648.0)                      # [0, 1)
        scale = (0.02, 1.0, 300.0)[(i // 32) % 3]
        values.append(f32(f32(u - 0.5) * f32(2.0 * scale)))
    values += [0.0] * 32                                    # all zero: d = 0
    values += [f32(-1.0 + j / 64.0) for j in range(32)]     # largest magnitude negative
    values += [f32(j - 8.0) for j in range(32)]             # exact steps of a 4-bit grid
    values += [f32(0.5 * (j % 3) - 0.5) for j in range(32)] # ties at .5 after scaling
    return values


def rows():
    """(label, values): random rows at several scales and lengths, and edge rows."""
    rng = random.Random(31)
    uniform = lambda n, s: [f32(rng.uniform(-s, s)) for _ in range(n)]
    out = []
    for scale in (1e-3, 0.02, 1.0, 300.0):
        out.append((f"uniform_{scale:g}", uniform(QK_K, scale)))
    out.append(("gauss_512", [f32(rng.gauss(0.0, 0.05)) for _ in range(512)]))
    out.append(("uniform_768", uniform(3 * QK_K, 2.0)))
    out.append(("heavy_tails", [f32(rng.gauss(0, 1) ** 3) for _ in range(QK_K)]))
    out.append(("all_zero", [0.0] * QK_K))
    out.append(("below_eps", [f32(rng.uniform(-1e-16, 1e-16)) for _ in range(QK_K)]))
    row = uniform(QK_K, 0.01)
    row[77] = 40.0
    out.append(("outlier", row))
    row = uniform(QK_K, 1.0)
    for b in range(0, QK_K, 16):                            # every 16- and 32-block's extreme < 0
        row[b + 5] = -3.0
    out.append(("negative_max", row))
    out.append(("positive", [f32(abs(v)) + 0.5 for v in uniform(QK_K, 1.0)]))
    out.append(("negative", [f32(-abs(v)) - 0.25 for v in uniform(QK_K, 1.0)]))
    out.append(("constant", [0.75] * QK_K))
    out.append(("int_grid", [float(j % 16 - 8) for j in range(QK_K)]))
    out.append(("halves", [0.5 * (j % 5) - 1.0 for j in range(QK_K)]))
    out.append(("ties_31", [f32((j % 32) - 15.5) for j in range(QK_K)]))
    out.append(("ties_q8", [f32(((j * 7) % 255 - 127) / 2.0) for j in range(QK_K)]))
    # exact ties for nearest_int: a first value of -127 makes Q8_K's (and Q8_0's) step 1, one
    # of -32 in each 16 Q6_K's first grid's step 1; the others lie halfway between steps
    out.append(("ties_q8_k", [-127.0] + [float((j * 37) % 253 - 126) + 0.5 for j in range(1, QK_K)]))
    out.append(("ties_q6_k", [-32.0 if j % 16 == 0 else float((j * 5) % 63 - 31) + 0.5 for j in range(QK_K)]))
    out.append(("golden", golden_inputs()[:QK_K]))
    return out


def hexs(data):
    return bytes(data).hex()


def floats_hex(values):
    return struct.pack(f"<{len(values)}f", *values).hex()


def reference(ggml):
    for fmt in FORMATS:
        for label, x in rows():
            q = ggml.quantize(fmt, x)
            y = ggml.dequantize(fmt, q, len(x))
            print(f"case {fmt[0]} {len(x)} {label}")
            print("x", floats_hex(x))
            print("q", hexs(q))
            print("y", floats_hex(y))


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def golden(ggml):
    """test_quant.c's expected_hex entries, then its expected_to_float_fnv ones: FNV-1a
    (64-bit) of the f32 bytes ggml's to_float makes of those bytes."""
    x = golden_inputs()
    hashes = []
    for fmt in FORMATS:
        n = len(x) if fmt[2] == 32 else QK_K
        q = ggml.quantize(fmt, x[:n])
        h = hexs(q)
        print(f"    [KILN_{fmt[0].upper()}] = /* ggml's {len(q)} bytes of the first {n} values */")
        lines = [f'    "{h[i:i + 96]}"' for i in range(0, len(h), 96)]
        print("\n".join(lines) + ",")
        y = ggml.dequantize(fmt, q, n)
        hashes.append(f"    [KILN_{fmt[0].upper()}] = 0x{fnv1a64(struct.pack(f'<{n}f', *y)):016x}u,")
    print("\n".join(hashes))


def main():
    ggml = Ggml(load())
    if sys.argv[1:] == ["--golden"]:
        golden(ggml)
    elif not sys.argv[1:]:
        reference(ggml)
    else:
        sys.exit("usage: quant_reference.py [--golden]")


if __name__ == "__main__":
    main()
