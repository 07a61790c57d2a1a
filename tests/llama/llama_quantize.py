"""llama.cpp's own GGUF quantizer, the function behind llama-quantize: llama_model_quantize of
node-llama-cpp 3.21.1's prebuilt libllama (llama.cpp 80fb11a), through ctypes. It turns an
F32 or F16 GGUF into a mix (Q4_K_M, Q5_K_M, ...) with llama-quant.cpp's per-tensor choice
and its fallbacks for rows that are not a multiple of 256, without an importance matrix.

    quantize(found, "in-F32.gguf", "out-Q4_K_M.gguf", "Q4_K_M")

    llama_quantize.py SRC.gguf DST.gguf Q4_K [--pure]   (the same from the command line)

found is peers.find()'s answer (its libggml_base names the folder of the binaries). The
tests that need a mix call this one function (the K-quant decode checks; kiln's own mix is
compared with its output)."""
import ctypes
import glob
import os

# llama.h's enum llama_ftype at 80fb11a (only the mixes and pure types the tests ask for);
# the pure Q4_K and Q5_K are Q4_K_S's and Q5_K_S's ftypes quantized --pure
FTYPE = {"Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q5_0": 8, "Q5_1": 9, "Q6_K": 18, "Q4_K": 14, "Q5_K": 16,
         "Q4_K_S": 14, "Q4_K_M": 15, "Q5_K_S": 16, "Q5_K_M": 17}


class Params(ctypes.Structure):
    """llama.h's struct llama_model_quantize_params at 80fb11a, field for field."""
    _fields_ = [("nthread", ctypes.c_int32), ("ftype", ctypes.c_int), ("output_tensor_type", ctypes.c_int),
                ("token_embedding_type", ctypes.c_int), ("allow_requantize", ctypes.c_bool),
                ("quantize_output_tensor", ctypes.c_bool), ("only_copy", ctypes.c_bool), ("pure", ctypes.c_bool),
                ("keep_split", ctypes.c_bool), ("dry_run", ctypes.c_bool), ("imatrix", ctypes.c_void_p),
                ("kv_overrides", ctypes.c_void_p), ("tt_overrides", ctypes.c_void_p),
                ("prune_layers", ctypes.c_void_p), ("max_buf_size", ctypes.c_size_t)]


_lib = None
_LOG = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
_log_lines = []
# llama.cpp's log (a line per tensor) kept for the error of a failed call, not printed
_keep_log = _LOG(lambda level, text, user: _log_lines.append(text.decode(errors="replace")))


def _libllama(found):
    """libllama of the peers' binaries (its file is libllama.v<version>.so there), loaded once
    with its backend initialised."""
    global _lib
    if _lib is None:
        bins = os.path.dirname(found["libggml_base"])
        names = sorted(glob.glob(os.path.join(bins, "libllama.so")) + glob.glob(os.path.join(bins, "libllama.v*.so")))
        if not names:
            raise FileNotFoundError(f"no libllama*.so in {bins}")
        _lib = ctypes.CDLL(names[0])
        _lib.llama_model_quantize_default_params.restype = Params
        _lib.llama_model_quantize.restype = ctypes.c_uint32
        _lib.llama_model_quantize.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(Params)]
        _lib.llama_log_set.argtypes = [_LOG, ctypes.c_void_p]
        _lib.llama_log_set(_keep_log, None)
        _lib.llama_backend_init()
    return _lib


def quantize(found, src, dst, ftype, pure=False, threads=1):
    """Writes dst, llama.cpp's ftype mix (a key of FTYPE) of the GGUF file src (pure: every
    matrix in ftype's own type, llama-quantize --pure, with its fallbacks still); raises
    RuntimeError with the tail of llama.cpp's log when llama_model_quantize fails."""
    lib = _libllama(found)
    del _log_lines[:]
    p = lib.llama_model_quantize_default_params()
    p.ftype, p.pure, p.nthread = FTYPE[ftype], pure or ftype in ("Q4_K", "Q5_K"), threads
    rc = lib.llama_model_quantize(src.encode(), dst.encode(), ctypes.byref(p))
    if rc:
        tail = "".join(_log_lines).strip()[-400:]
        raise RuntimeError(f"llama_model_quantize({src} -> {ftype}) returned {rc}: {tail}")


def main():
    import argparse
    import sys

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import peers

    ap = argparse.ArgumentParser(description="llama.cpp's llama_model_quantize of a GGUF file")
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("type", choices=sorted(FTYPE))
    ap.add_argument("--pure", action="store_true", help="every matrix in TYPE (llama-quantize --pure)")
    a = ap.parse_args()
    found = peers.find()
    if not found.get("libggml_base"):
        sys.exit(f"llama_quantize: no llama.cpp binaries among the npm peers: {found.get('why')}")
    try:
        quantize(found, a.src, a.dst, a.type, a.pure)
    except (RuntimeError, FileNotFoundError) as e:
        sys.exit(f"llama_quantize: {e}")


if __name__ == "__main__":
    main()
