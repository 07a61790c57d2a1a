"""Rotary position embeddings as llama.cpp computes them: ggml_rope_ext and
ggml_rope_ext_back on ggml's CPU backend (node-llama-cpp's libggml-base.so and
libggml-cpu-x64.so, found under $KILN_NODE_PEERS), for test_op_rope --ggml-reference
(tests/op_references.cmake). Mode GGML_ROPE_TYPE_NORMAL is kiln's KILN_ROPE_ADJACENT,
GGML_ROPE_TYPE_NEOX its KILN_ROPE_HALF; ggml's freq factors (llama.cpp's rope_freqs) are
kiln's. ggml's [ne0 = D, ne1 = H, ne2 = T, ne3 = B] is kiln's [B, T, H, D] in memory.

Output as tests/rope_reference.py's; dx is ggml_rope_ext_back of w (the gradient of
sum(y * w)). Exits 77 with one line when the peer is not there."""
import ctypes
import os
import random
import sys

peers = os.environ.get("KILN_NODE_PEERS", "")
bins = os.path.join(peers, "node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64")
if not peers or not os.path.exists(os.path.join(bins, "libggml-cpu-x64.so")):
    print("skipping: llama.cpp's ggml not found (set KILN_NODE_PEERS to a folder holding "
          "node_modules/@node-llama-cpp/linux-x64)", file=sys.stderr)
    sys.exit(77)

base_lib = ctypes.CDLL(os.path.join(bins, "libggml-base.so"), mode=ctypes.RTLD_GLOBAL)
cpu_lib = ctypes.CDLL(os.path.join(bins, "libggml-cpu-x64.so"))

GGML_TYPE_F32, GGML_TYPE_I32 = 0, 26
GGML_ROPE_TYPE_NORMAL, GGML_ROPE_TYPE_NEOX = 0, 2


class InitParams(ctypes.Structure):
    _fields_ = [("mem_size", ctypes.c_size_t), ("mem_buffer", ctypes.c_void_p), ("no_alloc", ctypes.c_bool)]


P, I64, F = ctypes.c_void_p, ctypes.c_int64, ctypes.c_float
base_lib.ggml_init.restype, base_lib.ggml_init.argtypes = P, [InitParams]
base_lib.ggml_free.argtypes = [P]
base_lib.ggml_new_tensor_1d.restype, base_lib.ggml_new_tensor_1d.argtypes = P, [P, ctypes.c_int, I64]
base_lib.ggml_new_tensor_4d.restype = P
base_lib.ggml_new_tensor_4d.argtypes = [P, ctypes.c_int, I64, I64, I64, I64]
base_lib.ggml_get_data.restype, base_lib.ggml_get_data.argtypes = P, [P]
for fn in (base_lib.ggml_rope_ext, base_lib.ggml_rope_ext_back):
    fn.restype = P
    fn.argtypes = [P, P, P, P, ctypes.c_int, ctypes.c_int, ctypes.c_int, F, F, F, F, F, F]
base_lib.ggml_new_graph.restype, base_lib.ggml_new_graph.argtypes = P, [P]
base_lib.ggml_build_forward_expand.argtypes = [P, P]
cpu_lib.ggml_cpu_init.argtypes = []
cpu_lib.ggml_graph_compute_with_ctx.argtypes = [P, P, ctypes.c_int]
cpu_lib.ggml_cpu_init()


def fill(tensor, ctype, values):
    arr = (ctype * len(values)).from_address(base_lib.ggml_get_data(tensor))
    arr[:] = values


def read(tensor, n):
    return list((ctypes.c_float * n).from_address(base_lib.ggml_get_data(tensor)))


def emit(name, values):
    print(name, " ".join(repr(float(v)) for v in values))


rng = random.Random(30)


def f32(v):
    return ctypes.c_float(v).value


def case(layout, base, pos0, shape, factors=None):
    b, t, h, d = shape
    n = b * t * h * d
    ctx = base_lib.ggml_init(InitParams(64 << 20, None, False))
    x = base_lib.ggml_new_tensor_4d(ctx, GGML_TYPE_F32, d, h, t, b)
    w = base_lib.ggml_new_tensor_4d(ctx, GGML_TYPE_F32, d, h, t, b)
    pos = base_lib.ggml_new_tensor_1d(ctx, GGML_TYPE_I32, t)
    ff = base_lib.ggml_new_tensor_1d(ctx, GGML_TYPE_F32, d // 2) if factors else None
    xv = [f32(rng.gauss(0, 1)) for _ in range(n)]
    wv = [f32(rng.gauss(0, 1)) for _ in range(n)]
    fill(x, ctypes.c_float, xv)
    fill(w, ctypes.c_float, wv)
    fill(pos, ctypes.c_int32, list(range(pos0, pos0 + t)))
    if ff:
        fill(ff, ctypes.c_float, factors)
    mode = GGML_ROPE_TYPE_NORMAL if layout == 0 else GGML_ROPE_TYPE_NEOX
    # freq_scale 1, ext_factor 0 (no YaRN), attn_factor 1: the plain rotation
    args = (d, mode, 0, base, 1.0, 0.0, 1.0, 32.0, 1.0)
    y = base_lib.ggml_rope_ext(ctx, x, pos, ff, *args)
    dx = base_lib.ggml_rope_ext_back(ctx, w, pos, ff, *args)
    graph = base_lib.ggml_new_graph(ctx)
    base_lib.ggml_build_forward_expand(graph, y)
    base_lib.ggml_build_forward_expand(graph, dx)
    cpu_lib.ggml_graph_compute_with_ctx(ctx, graph, 1)
    print("case", layout, repr(base), pos0, b, t, h, d, d // 2 if factors else 0)
    if factors:
        emit("factors", factors)
    emit("x", xv)
    emit("w", wv)
    emit("y", read(y, n))
    emit("dx", read(dx, n))
    base_lib.ggml_free(ctx)


def llama3_like(pairs):
    """Factors shaped as Llama 3's (1 for the fast pairs, 8 for the slow ones, a ramp between)."""
    return [f32(1.0 + 7.0 * min(1.0, max(0.0, (i - pairs / 2) / (pairs / 4)))) for i in range(pairs)]


case(0, 10000.0, 0, (2, 5, 3, 8))
case(0, 500000.0, 17, (1, 6, 4, 64), llama3_like(32))
case(1, 1000000.0, 3, (2, 4, 3, 16))
case(1, 10000.0, 100, (1, 3, 2, 64), llama3_like(32))
case(1, 1000000.0, 1000, (1, 1, 2, 16))
