/* Fused attention: the case table (finite differences on the CPU, the CPU on a device). */
#include "testutil.h"

static void add_tests(Suite *s, TCase *tc) {
    (void)s, (void)tc;
}

int main(int argc, char **argv) {
    return kt_main_group(argc, argv, "attention", add_tests);
}
