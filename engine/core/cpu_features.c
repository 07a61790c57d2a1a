/* The host CPU's features from cpuid and xgetbv (cpu_features.h). */
#include "core/cpu_features.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>

/* XCR0: which register states the OS saves on a context switch. */
static uint64_t read_xcr0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static void detect(kiln_cpu_features *f) {
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return;
    unsigned max_leaf = a;
    char vendor[13];
    memcpy(vendor, &b, 4);
    memcpy(vendor + 4, &d, 4);
    memcpy(vendor + 8, &c, 4);
    vendor[12] = 0;
    f->amd = !strcmp(vendor, "AuthenticAMD");
    if (max_leaf < 1 || !__get_cpuid(1, &a, &b, &c, &d)) return;
    int osxsave = (c >> 27) & 1;
    if (!osxsave) return; /* no xgetbv: the OS saves no AVX state */
    uint64_t xcr0 = read_xcr0();
    int ymm = (xcr0 & 0x6) == 0x6;     /* SSE and AVX state */
    int zmm = (xcr0 & 0xe6) == 0xe6;   /* and opmask, ZMM_Hi256, Hi16_ZMM */
    f->avx = ymm && ((c >> 28) & 1);
    f->f16c = f->avx && ((c >> 29) & 1);
    f->fma = f->avx && ((c >> 12) & 1);
    if (max_leaf < 7) return;
    __cpuid_count(7, 0, a, b, c, d);
    f->avx2 = f->avx && ((b >> 5) & 1);
    f->avx512f = zmm && ((b >> 16) & 1);
    f->avx512vl = f->avx512f && ((b >> 31) & 1);
    f->avx512bw = f->avx512f && ((b >> 30) & 1);
    f->avx512vnni = f->avx512f && ((c >> 11) & 1);
    f->avx512fp16 = f->avx512f && ((d >> 23) & 1);
}
#else
static void detect(kiln_cpu_features *f) { (void)f; }
#endif

static kiln_cpu_features g_features;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static void detect_once(void) { detect(&g_features); }

const kiln_cpu_features *kiln_cpu(void) {
    pthread_once(&g_once, detect_once);
    return &g_features;
}
