/* Writing a file so that a reader never sees half of it: the bytes go to a temporary file
 * beside the target ("<path>.tmp.<pid>"), which is flushed, fsync'd and renamed over the
 * target, and the directory is fsync'd. A failure at any step (a full disk, a file-size
 * limit: EFBIG) removes the temporary file and leaves any previous file untouched.
 * Checkpoints (safetensors) and GGUF exports are written this way. */
#ifndef KILN_HOST_FORMATS_FILE_ATOMIC_H
#define KILN_HOST_FORMATS_FILE_ATOMIC_H

#include <stddef.h>

typedef struct atomic_file atomic_file;

/* Starts writing `path`. Returns NULL with "PATH: cannot create the temporary file TMP:
 * REASON" in err. */
atomic_file *atomic_file_begin(const char *path, char *err, size_t errlen);
/* Appends n bytes; the first failure is kept for atomic_file_commit. */
void atomic_file_write(atomic_file *f, const void *data, size_t n);
/* Finishes: flush, fsync, close, rename over the target, fsync of its directory. Returns
 * 0, or -1 with "PATH: not saved (STEP of TMP failed: REASON); any previous file is
 * unchanged" after removing the temporary file. Frees f either way. */
int atomic_file_commit(atomic_file *f, char *err, size_t errlen);
/* Gives up: removes the temporary file and frees f. */
void atomic_file_abort(atomic_file *f);

#endif
