#!/usr/bin/python3
"""Writes the expected bytes of tests/test_quant.c with ggml's own reference quantizers
(quantize_row_q8_0_ref, quantize_row_q4_0_ref, quantize_row_q4_1_ref of libggml-base.so),
called through ctypes on the same inputs test_quant.c builds. Not run by the tests: a check
of kiln's quantizers against the library that defines the formats, run by hand when the
inputs change; the bytes it prints are pasted into test_quant.c.

  quant_reference.py PATH/TO/libggml-base.so

libggml-base.so comes with llama.cpp's prebuilt binaries, e.g.
`npm i -E node-llama-cpp@3.21.1` (node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/).
"""
import ctypes
import struct
import sys


def inputs():
    """The rows of test_quant.c's quant_inputs(), value for value (float32 arithmetic
    through struct round trips): an LCG's values at three scales, then blocks that test
    the rules' edges."""
    f32 = lambda v: struct.unpack("<f", struct.pack("<f", v))[0]
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


def main():
    lib = ctypes.CDLL(sys.argv[1])
    x = inputs()
    n = len(x)
    src = (ctypes.c_float * n)(*x)
    for name, block in (("q8_0", 34), ("q4_0", 18), ("q4_1", 20)):
        out = (ctypes.c_uint8 * (n // 32 * block))()
        getattr(lib, f"quantize_row_{name}_ref")(src, out, ctypes.c_int64(n))
        hexs = bytes(out).hex()
        print(f"/* {name}: {len(hexs) // 2} bytes */")
        for i in range(0, len(hexs), 96):
            print(f'    "{hexs[i:i + 96]}"')


if __name__ == "__main__":
    main()
