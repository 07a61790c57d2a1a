/* Linked into every executable of a sanitizer build (KILN_SANITIZE) and exported from it,
 * so that it takes the place of libc's dlclose for every library in the process: shared
 * libraries are never unloaded, and LeakSanitizer's check at exit still sees them.
 *
 * Why: the Vulkan loader unloads its drivers in vkDestroyInstance. A driver's block that
 * one of its globals points at (lavapipe keeps its CPU-topology masks so on AMD hosts)
 * then looks like a direct leak, and its allocating frame belongs to no module any more
 * ("<unknown module>", or whatever library is mapped there later), so the driver entries
 * of tests/lsan.supp cannot match it. With the driver still mapped the block stays
 * reachable, and any real driver leak is named by its module. A test process loses
 * nothing by keeping its libraries until it exits. */
#include <dlfcn.h>

int dlclose(void *handle) {
    (void)handle;
    return 0;
}
