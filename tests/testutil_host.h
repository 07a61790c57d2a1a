/* Test machinery for the host's own programs (test_host_*.c that need no backend): a suite
 * run in a scratch folder, and the replay of a fuzzer's seed folder that the parser tests
 * share. Their main() runs the suite with kt_run_tcase (testutil.h). */
#ifndef KILN_TESTUTIL_HOST_H
#define KILN_TESTUTIL_HOST_H

#include <check.h>

/* kt_run_tcase with the scratch folder `tmpdir` (a mkdtemp template ending in XXXXXX, which
 * becomes its name) made first, and removed afterwards with what the tests left in it. 1
 * with the reason on stderr when the folder cannot be made. */
int kt_run_tcase_in(char *tmpdir, const char *suite_name, const char *tcase_name, int timeout_s,
                    void (*add_tests)(TCase *tc));

/* Replays every file of the seed folder `dir` (but names starting with '.') through
 * replay(path, name), which returns 1 when the parser accepted the seed and 0 when it
 * refused it (the replay asserts how). Asserts that the folder holds at least min_files
 * seeds, of which at least min_accepted were accepted. */
void kt_replay_seeds(const char *dir, int (*replay)(const char *path, const char *name), int min_files,
                     int min_accepted);

#endif
