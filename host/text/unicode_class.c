/* Code point classes by binary search over generated ranges. */
#include "text/unicode_class.h"

static const struct urange {
    uint32_t lo, hi;
    uclass cls;
} ranges[] = {
#include "text/unicode_table.inc"
};
enum { N_RANGES = sizeof ranges / sizeof ranges[0] };

uclass unicode_class(uint32_t cp) {
    size_t lo = 0, hi = N_RANGES;
    while (lo < hi) { /* the first range whose hi >= cp */
        size_t mid = lo + (hi - lo) / 2;
        if (ranges[mid].hi < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < N_RANGES && ranges[lo].lo <= cp ? ranges[lo].cls : UCLASS_OTHER;
}
