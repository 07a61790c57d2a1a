/* Replacing a file whole: a reader, a crash or a power cut sees the previous file or the
 * new one, never a part of either. Every file libkiln and the kiln program write whole goes
 * through here: checkpoints and optimizer state, tokenizers, GGUF exports, charts, JSON
 * reports, translation pairs, device-check stamps, the Vulkan pipeline cache and the OpenCL
 * program cache. (A log that grows by appending, such as a run's metrics.jsonl, is not
 * replaced and does not.)
 *
 * How: the bytes go to a temporary file in the target's folder, "<path>.tmp.<pid>.<n>"
 * (<n> counts this process's writes, so threads never share one), which is flushed,
 * fsync'd, closed and renamed over the target; then the folder is fsync'd, so that the
 * rename itself is on disk. A failure at any step (a full disk, or a file-size limit:
 * EFBIG once SIGXFSZ is ignored) removes the temporary file and leaves the previous file
 * byte-identical.
 *
 * Errors: unlike the tensor API, which reports through kiln_error_message(), these calls
 * write one line naming the file into the caller's buffer `err` of `errlen` bytes (NULL
 * for none: the library's caches, whose failures are silent and must not replace the
 * thread's last error):
 *   "PATH: cannot create the temporary file in its folder: REASON"
 *   "PATH: not saved (STEP of FILE failed: REASON); any previous file is unchanged"
 * and return KILN_ERR_IO (KILN_ERR_ARGUMENT for a missing path, KILN_ERR_MEMORY). */
#ifndef KILN_FILE_H
#define KILN_FILE_H

#include <stdio.h>

#include "kiln/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_file kiln_file;

/* Starts replacing `path`; NULL with the error in err. */
kiln_file *kiln_file_begin(const char *path, char *err, size_t errlen);
/* The keep-previous mode: as kiln_file_begin, and the commit, before its rename, keeps the
 * file being replaced (if any) as `previous`, a path in the same folder: a hard link to it
 * under a temporary name, renamed over `previous`. Both names always hold a whole file, and
 * after each commit `previous` holds the one it replaced (a training run's optimizer state
 * of the checkpoint before, which a resume takes when the last checkpoint's weights were
 * never written). A write that fails leaves both files untouched; only a failure of the
 * very last rename leaves `previous` already holding the unchanged target's content. */
kiln_file *kiln_file_begin_keeping(const char *path, const char *previous, char *err, size_t errlen);

/* Appends n bytes; the first failure is kept and reported by the commit. */
void kiln_file_write(kiln_file *f, const void *data, size_t n);
/* The temporary file's stream, for writers that print (fprintf): its errors too are
 * reported by the commit. It must not be closed. */
FILE *kiln_file_stream(kiln_file *f);

/* Finishes: flush, fsync, close, (keep the previous file,) rename over the target, fsync
 * of the folder. Frees f either way; on failure the temporary file is removed. */
kiln_status kiln_file_commit(kiln_file *f, char *err, size_t errlen);
/* Gives up (a writer that failed on its own): removes the temporary file and frees f.
 * NULL is allowed. */
void kiln_file_abort(kiln_file *f);

/* The whole of a buffer in one call: begin, write, commit. */
kiln_status kiln_file_write_all(const char *path, const void *data, size_t n, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
