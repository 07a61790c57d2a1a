/* GPU timestamps per kernel, enabled by KILN_VK_PROFILE=1: two timestamps around every
 * dispatch, read back when the batch completes, summed per shader, and printed to stderr
 * when the context closes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_internal.h"

kiln_status vk_profile_begin(vk_dev *d, vk_batch *b, VkCommandBuffer cmd, const char *name) {
    if (!b->queries) {
        VkQueryPoolCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
        qci.queryType = VK_QUERY_TYPE_TIMESTAMP;
        qci.queryCount = VK_MAX_QUERIES;
        VkResult r = vkCreateQueryPool(d->device, &qci, NULL, &b->queries);
        if (r != VK_SUCCESS) return vk_result(r, "vulkan: vkCreateQueryPool");
        b->query_names = calloc(VK_MAX_QUERIES / 2, sizeof *b->query_names);
        if (!b->query_names) return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
        /* a new pool must be reset before use, in the command stream like later resets */
        vkCmdResetQueryPool(cmd, b->queries, 0, VK_MAX_QUERIES);
        b->n_queries = 0;
    }
    if (b->n_queries + 2 > VK_MAX_QUERIES) return KILN_ERR_STATE;
    b->query_names[b->n_queries / 2] = name;
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, b->queries, b->n_queries++);
    return KILN_OK;
}

void vk_profile_end(vk_dev *d, vk_batch *b, VkCommandBuffer cmd) {
    (void)d;
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, b->queries, b->n_queries++);
}

static vk_kernel_time *entry(vk_dev *d, const char *name) {
    for (int i = 0; i < d->n_times; i++)
        if (d->times[i].name == name) return &d->times[i];
    if (d->n_times == d->cap_times) {
        int cap = d->cap_times ? 2 * d->cap_times : 32;
        vk_kernel_time *g = realloc(d->times, (size_t)cap * sizeof *g);
        if (!g) return NULL;
        d->times = g;
        d->cap_times = cap;
    }
    vk_kernel_time *t = &d->times[d->n_times++];
    t->name = name;
    t->count = 0;
    t->ms = 0;
    return t;
}

void vk_profile_collect(vk_dev *d, vk_batch *b) {
    if (!b->queries || b->n_queries == 0) return;
    uint64_t *ts = malloc(b->n_queries * sizeof *ts);
    if (ts && vkGetQueryPoolResults(d->device, b->queries, 0, b->n_queries, b->n_queries * sizeof *ts, ts, sizeof *ts,
                                    VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) == VK_SUCCESS) {
        uint64_t mask = d->caps.timestamp_bits >= 64 ? ~0ull : ((1ull << d->caps.timestamp_bits) - 1);
        for (uint32_t i = 0; i + 1 < b->n_queries; i += 2) {
            vk_kernel_time *t = entry(d, b->query_names[i / 2]);
            if (!t) break;
            uint64_t ticks = ((ts[i + 1] & mask) - (ts[i] & mask)) & mask;
            t->count++;
            t->ms += (double)ticks * d->caps.timestamp_period * 1e-6;
        }
    }
    free(ts);
    b->n_queries = 0;
}

/* qsort order of kernel times: the longest first */
static int longest_first(const void *a, const void *b) {
    double x = ((const vk_kernel_time *)a)->ms, y = ((const vk_kernel_time *)b)->ms;
    return x < y ? 1 : x > y ? -1 : 0;
}

void vk_profile_report(vk_dev *d) {
    if (!d->profile) return;
    if (d->n_times == 0) {
        fprintf(stderr, "kiln: KILN_VK_PROFILE: no timed dispatches on %s\n", d->name);
        return;
    }
    qsort(d->times, (size_t)d->n_times, sizeof *d->times, longest_first);
    double total = 0;
    for (int i = 0; i < d->n_times; i++) total += d->times[i].ms;
    fprintf(stderr, "kiln: GPU time per kernel on %s (KILN_VK_PROFILE)\n", d->name);
    fprintf(stderr, "  %-24s %10s %12s %10s %7s\n", "kernel", "calls", "total ms", "mean us", "share");
    for (int i = 0; i < d->n_times; i++) {
        const vk_kernel_time *t = &d->times[i];
        fprintf(stderr, "  %-24s %10llu %12.3f %10.1f %6.1f%%\n", t->name, (unsigned long long)t->count, t->ms,
                1000.0 * t->ms / (double)t->count, total > 0 ? 100.0 * t->ms / total : 0.0);
    }
    fprintf(stderr, "  %-24s %10s %12.3f\n", "total", "", total);
}
