/* Test machinery for the host's own programs: see testutil_host.h. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "testfile.h"
#include "testutil.h"
#include "testutil_host.h"

int kt_run_tcase_in(char *tmpdir, const char *suite_name, const char *tcase_name, int timeout_s,
                    void (*add_tests)(TCase *tc)) {
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    int failed = kt_run_tcase(suite_name, tcase_name, timeout_s, add_tests);
    kt_remove_tree(tmpdir);
    return failed;
}

void kt_replay_seeds(const char *dir, int (*replay)(const char *path, const char *name), int min_files,
                     int min_accepted) {
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "no seed directory %s", dir);
    int files = 0, accepted = 0;
    char path[1024];
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        files++;
        accepted += replay(path, e->d_name);
    }
    closedir(d);
    ck_assert_msg(files >= min_files, "%s: %d seeds, fewer than %d", dir, files, min_files);
    ck_assert_msg(accepted >= min_accepted, "%s: %d seeds accepted, fewer than %d", dir, accepted, min_accepted);
}
