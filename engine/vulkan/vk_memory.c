/* Device memory: a few large blocks, sub-allocated; staging for transfers; host-visible
 * memory used directly on unified-memory devices.
 *
 * Why blocks: devices may allow only 4096 allocations, and one VkBuffer per block lets a
 * kernel bind its operand's byte range within a block and address it by an element offset
 * (see vk_internal.h). A block never exceeds maxMemoryAllocationSize, the backend's
 * max_buffer_bytes. A tensor may be larger than one binding can address
 * (maxStorageBufferRange: 128 MiB on lavapipe, GPT-2's f32 token table is 154 MB): the
 * kernels that meet such tensors split their work into pieces that fit (vk_split.c), and
 * vk_dispatch refuses any other with a clear error.
 * Requests above half the standard block size get a dedicated block of their own. */
#define _DEFAULT_SOURCE /* sysconf(_SC_PHYS_PAGES) */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vk_internal.h"

#define VK_ALIGN 256                          /* sub-allocation granularity (>= any minStorageBufferOffsetAlignment) */
#define VK_STD_BLOCK ((VkDeviceSize)64 << 20) /* standard block size, when the device allows it */
#define VK_STAGE_FLUSH ((VkDeviceSize)256 << 20) /* staged bytes after which a batch is submitted */

static int find_type(const VkPhysicalDeviceMemoryProperties *mp, uint32_t bits, VkMemoryPropertyFlags want,
                     VkMemoryPropertyFlags avoid) {
    for (uint32_t i = 0; i < mp->memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = mp->memoryTypes[i].propertyFlags;
        if ((bits & (1u << i)) && (f & want) == want && !(f & avoid)) return (int)i;
    }
    return -1;
}

static const VkBufferUsageFlags k_usage =
    VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
    VK_BUFFER_USAGE_TRANSFER_DST_BIT;

static void set_pool(vk_dev *d, vk_pool_kind k, int type) {
    VkMemoryPropertyFlags f = d->phys.mem.memoryTypes[type].propertyFlags;
    d->pools[k].type_index = (uint32_t)type;
    d->pools[k].host_visible = (f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) != 0;
    d->pools[k].coherent = (f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
}

static kiln_status block_create(vk_dev *d, vk_pool_kind pool, VkDeviceSize size, int dedicated, vk_block **out);

kiln_status vk_memory_init(vk_dev *d) {
    /* the memory types a storage + transfer buffer may live in */
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bci.size = 4096;
    bci.usage = k_usage;
    VkBuffer probe;
    VkResult r = vkCreateBuffer(d->device, &bci, NULL, &probe);
    if (r != VK_SUCCESS) return vk_result(r, "vulkan: vkCreateBuffer");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(d->device, probe, &req);
    vkDestroyBuffer(d->device, probe, NULL);

    const VkPhysicalDeviceMemoryProperties *mp = &d->phys.mem;
    const VkMemoryPropertyFlags DL = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, HV = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                                HC = VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, CA = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
    VkPhysicalDeviceType t = d->phys.props.deviceType;
    int shared_memory = t == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU || t == VK_PHYSICAL_DEVICE_TYPE_CPU;
    int dev = -1;
    /* Unified memory: device-local memory the host can map is the same RAM; use it directly.
     * A discrete GPU's host-visible VRAM (ReBAR) is slow to read from the host: avoid it. */
    if (shared_memory) dev = find_type(mp, req.memoryTypeBits, DL | HV | HC, 0);
    d->unified = dev >= 0;
    if (dev < 0) dev = find_type(mp, req.memoryTypeBits, DL, HV);
    if (dev < 0) dev = find_type(mp, req.memoryTypeBits, DL, 0);
    if (dev < 0) dev = find_type(mp, req.memoryTypeBits, 0, 0);
    int up = find_type(mp, req.memoryTypeBits, HV | HC, DL);
    if (up < 0) up = find_type(mp, req.memoryTypeBits, HV | HC, 0);
    int down = find_type(mp, req.memoryTypeBits, HV | HC | CA, 0);
    if (down < 0) down = up;
    if (dev < 0 || up < 0)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "vulkan: %s has no memory type kiln can use for buffers", d->name);
    set_pool(d, VK_POOL_DEVICE, dev);
    set_pool(d, VK_POOL_UPLOAD, up);
    set_pool(d, VK_POOL_READBACK, down);

    /* a binding starts up to minStorageBufferOffsetAlignment - 1 bytes before its operand
     * and ends on a whole texel */
    d->max_operand_bytes = (d->caps.max_storage_range - d->caps.min_ssbo_align - 16) / 16 * 16;
    VkDeviceSize max_block = d->caps.max_alloc_bytes / VK_ALIGN * VK_ALIGN;
    d->table.max_buffer_bytes = (size_t)max_block;
    d->block_size = VK_STD_BLOCK < max_block ? VK_STD_BLOCK : max_block;
    kiln_status s = vk_memory_budget(&d->phys, mp->memoryHeaps[mp->memoryTypes[dev].heapIndex].size, d->unified,
                                     &d->heap_budget);
    if (s) return s;
    return block_create(d, VK_POOL_DEVICE, VK_DUMMY_SLOTS * VK_DUMMY_SLOT_BYTES, 1, &d->dummy_block);
}

kiln_status vk_memory_budget(const vk_physical *p, VkDeviceSize heap, int unified, VkDeviceSize *budget) {
    *budget = heap;
    /* A CPU device's memory is the host's. lavapipe (Mesa 22.3) advertises a fixed 2 GiB
     * heap whatever the host has, and allocates with malloc beyond it; GPT-2 small's weights,
     * gradients and Adam moments alone take 1.9 GiB. Budget three quarters of the host's
     * RAM there instead: an allocation the host cannot back still fails with an error. */
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (p->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU && unified && pages > 0 && page > 0) {
        VkDeviceSize host = (VkDeviceSize)pages * (VkDeviceSize)page / 4 * 3;
        if (host > *budget) *budget = host;
    }
    /* KILN_VK_HEAP_BUDGET=BYTES: less, to leave a shared device room for other programs
     * (and for the tests of running out) */
    const char *cap = getenv("KILN_VK_HEAP_BUDGET");
    if (cap && *cap) {
        char *end;
        unsigned long long v = strtoull(cap, &end, 10);
        if (*end || v == 0)
            return kiln_set_error(KILN_ERR_ARGUMENT, "KILN_VK_HEAP_BUDGET=%s: give a positive number of bytes", cap);
        if (v < *budget) *budget = v;
    }
    return KILN_OK;
}

kiln_status vk_memory_info(void *dev, kiln_memory_info *out) {
    vk_dev *d = dev;
    const VkPhysicalDeviceMemoryProperties *mp = &d->phys.mem;
    uint32_t heap = mp->memoryTypes[d->pools[VK_POOL_DEVICE].type_index].heapIndex;
    out->total = mp->memoryHeaps[heap].size;
    out->usable = d->heap_budget;
    out->max_buffer = d->table.max_buffer_bytes;
    if (d->phys.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU && d->unified) {
        /* the host's RAM, whatever fixed size the heap advertises (vk_memory_budget) */
        uint64_t limit = kiln_host_cgroup_limit();
        out->total = kiln_host_ram();
        if (limit < out->usable) out->usable = limit;
    } else if (d->caps.memory_budget) {
        /* what the driver says this process can allocate there now, others' use counted */
        VkPhysicalDeviceMemoryBudgetPropertiesEXT b = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
        VkPhysicalDeviceMemoryProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2, .pNext = &b};
        vkGetPhysicalDeviceMemoryProperties2(d->phys.handle, &p2);
        if (b.heapBudget[heap] > 0 && b.heapBudget[heap] < out->usable) out->usable = b.heapBudget[heap];
    }
    return KILN_OK;
}

static kiln_status block_create(vk_dev *d, vk_pool_kind pool, VkDeviceSize size, int dedicated, vk_block **out) {
    if (d->n_allocations >= d->caps.max_alloc_count)
        return kiln_set_error(KILN_ERR_MEMORY, "vulkan: the device allows only %u memory allocations and kiln has made them all",
                              d->caps.max_alloc_count);
    if (pool == VK_POOL_DEVICE && d->bytes_reserved + size > d->heap_budget)
        return kiln_set_error(KILN_ERR_MEMORY,
                              "vulkan: out of device memory: %.1f MiB more would exceed the %.1f MiB heap (%.1f MiB in use); "
                              "free tensors or use a smaller batch",
                              (double)size / 1048576.0, (double)d->heap_budget / 1048576.0,
                              (double)d->bytes_reserved / 1048576.0);
    vk_block *b = calloc(1, sizeof *b);
    if (!b) return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bci.size = size;
    bci.usage = k_usage;
    VkResult r = vkCreateBuffer(d->device, &bci, NULL, &b->buffer);
    if (r != VK_SUCCESS) {
        free(b);
        return vk_result(r, "vulkan: vkCreateBuffer");
    }
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(d->device, b->buffer, &req);
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    mai.allocationSize = req.size;
    mai.memoryTypeIndex = d->pools[pool].type_index;
    r = req.memoryTypeBits & (1u << mai.memoryTypeIndex) ? vkAllocateMemory(d->device, &mai, NULL, &b->memory)
                                                         : VK_ERROR_FEATURE_NOT_PRESENT;
    if (r == VK_SUCCESS) r = vkBindBufferMemory(d->device, b->buffer, b->memory, 0);
    if (r == VK_SUCCESS && d->pools[pool].host_visible) r = vkMapMemory(d->device, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped);
    if (r != VK_SUCCESS) {
        if (b->memory) vkFreeMemory(d->device, b->memory, NULL);
        vkDestroyBuffer(d->device, b->buffer, NULL);
        free(b);
        if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
            return kiln_set_error(KILN_ERR_MEMORY, "vulkan: out of device memory allocating %.1f MiB (%.1f MiB in use); "
                                  "free tensors or use a smaller batch",
                                  (double)size / 1048576.0, (double)d->bytes_reserved / 1048576.0);
        return vk_result(r, "vulkan: allocating device memory");
    }
    b->size = size;
    b->pool = pool;
    b->dedicated = dedicated;
    b->id = ++d->next_block_id;
    b->cap_free = 8;
    b->free_ranges = malloc((size_t)b->cap_free * sizeof *b->free_ranges);
    if (!b->free_ranges) {
        vkFreeMemory(d->device, b->memory, NULL);
        vkDestroyBuffer(d->device, b->buffer, NULL);
        free(b);
        return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
    }
    b->free_ranges[0].begin = 0;
    b->free_ranges[0].end = size;
    b->n_free = 1;
    b->next = d->pools[pool].blocks;
    d->pools[pool].blocks = b;
    d->n_allocations++;
    if (pool == VK_POOL_DEVICE) d->bytes_reserved += size;
    *out = b;
    return KILN_OK;
}

static void block_destroy(vk_dev *d, vk_block *b) {
    vk_block **p = &d->pools[b->pool].blocks;
    while (*p && *p != b) p = &(*p)->next;
    if (*p) *p = b->next;
    if (b->mapped) vkUnmapMemory(d->device, b->memory);
    vkDestroyBuffer(d->device, b->buffer, NULL);
    vkFreeMemory(d->device, b->memory, NULL);
    d->n_allocations--;
    if (b->pool == VK_POOL_DEVICE) d->bytes_reserved -= b->size;
    free(b->free_ranges);
    free(b);
}

void vk_memory_destroy(vk_dev *d) {
    for (int k = 0; k < VK_POOLS; k++)
        while (d->pools[k].blocks) block_destroy(d, d->pools[k].blocks);
    d->dummy_block = NULL;
}

/* First fit in one block; returns the offset or UINT64_MAX. */
static VkDeviceSize block_take(vk_block *b, VkDeviceSize span) {
    for (int i = 0; i < b->n_free; i++) {
        vk_range *r = &b->free_ranges[i];
        if (r->end - r->begin < span) continue;
        VkDeviceSize at = r->begin;
        r->begin += span;
        if (r->begin == r->end) {
            memmove(r, r + 1, (size_t)(b->n_free - i - 1) * sizeof *r);
            b->n_free--;
        }
        return at;
    }
    return UINT64_MAX;
}

/* Returns a range to its block, merging with its neighbours. 0 when out of host memory
 * (the range is then lost to this block, which is harmless). */
static int block_give(vk_block *b, VkDeviceSize begin, VkDeviceSize end) {
    int i = 0;
    while (i < b->n_free && b->free_ranges[i].begin < begin) i++;
    int merge_prev = i > 0 && b->free_ranges[i - 1].end == begin;
    int merge_next = i < b->n_free && b->free_ranges[i].begin == end;
    if (merge_prev && merge_next) {
        b->free_ranges[i - 1].end = b->free_ranges[i].end;
        memmove(&b->free_ranges[i], &b->free_ranges[i + 1], (size_t)(b->n_free - i - 1) * sizeof *b->free_ranges);
        b->n_free--;
    } else if (merge_prev) {
        b->free_ranges[i - 1].end = end;
    } else if (merge_next) {
        b->free_ranges[i].begin = begin;
    } else {
        if (b->n_free == b->cap_free) {
            int cap = b->cap_free * 2;
            vk_range *g = realloc(b->free_ranges, (size_t)cap * sizeof *g);
            if (!g) return 0;
            b->free_ranges = g;
            b->cap_free = cap;
        }
        memmove(&b->free_ranges[i + 1], &b->free_ranges[i], (size_t)(b->n_free - i) * sizeof *b->free_ranges);
        b->free_ranges[i].begin = begin;
        b->free_ranges[i].end = end;
        b->n_free++;
    }
    return 1;
}

static int block_empty(const vk_block *b) {
    return b->n_free == 1 && b->free_ranges[0].begin == 0 && b->free_ranges[0].end == b->size;
}

kiln_status vk_buf_alloc(vk_dev *d, vk_pool_kind pool, size_t bytes, kiln_buf **out) {
    VkDeviceSize span = (VkDeviceSize)kiln_round_up((int64_t)(bytes ? bytes : 1), VK_ALIGN);
    if (span > d->table.max_buffer_bytes)
        return kiln_set_error(KILN_ERR_MEMORY, "vulkan: %zu bytes exceed the device's largest buffer (%zu bytes)", bytes,
                              d->table.max_buffer_bytes);
    kiln_buf *buf = malloc(sizeof *buf);
    if (!buf) return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
    vk_block *b = NULL;
    VkDeviceSize at = UINT64_MAX;
    if (span <= d->block_size / 2) {
        for (b = d->pools[pool].blocks; b; b = b->next) {
            if (b->dedicated) continue;
            if ((at = block_take(b, span)) != UINT64_MAX) break;
        }
    }
    if (!b) {
        int dedicated = span > d->block_size / 2;
        VkDeviceSize size = dedicated ? span : d->block_size;
        /* near the end of the heap, a smaller block still holds this request */
        if (!dedicated && pool == VK_POOL_DEVICE && d->bytes_reserved + size > d->heap_budget &&
            d->bytes_reserved + span <= d->heap_budget)
            size = (d->heap_budget - d->bytes_reserved) / VK_ALIGN * VK_ALIGN;
        kiln_status s = block_create(d, (vk_pool_kind)pool, size, dedicated, &b);
        if (s == KILN_ERR_MEMORY && !vk_idle(d)) {
            /* frees may be waiting for recorded work: finish it, then try once more */
            if (vk_flush(d, 1) == KILN_OK) {
                free(buf);
                return vk_buf_alloc(d, pool, bytes, out);
            }
        }
        if (s) {
            free(buf);
            return s;
        }
        at = block_take(b, span);
    }
    buf->block = b;
    buf->offset = at;
    buf->size = bytes;
    buf->span = span;
    *out = buf;
    return KILN_OK;
}

void vk_buf_destroy_now(vk_dev *d, kiln_buf *buf) {
    if (!buf) return;
    vk_block *b = buf->block;
    block_give(b, buf->offset, buf->offset + buf->span);
    free(buf);
    /* Keep one standard block per pool for reuse; give back every other empty block. */
    if (block_empty(b) && b != d->dummy_block) {
        int keep = !b->dedicated;
        if (keep)
            for (vk_block *o = d->pools[b->pool].blocks; o; o = o->next)
                if (o != b && !o->dedicated && block_empty(o)) keep = 0;
        if (!keep) block_destroy(d, b);
    }
}

void vk_buf_release(vk_dev *d, kiln_buf *buf) {
    if (!buf) return;
    if (vk_idle(d) || vk_defer_free(d, buf) != KILN_OK) vk_buf_destroy_now(d, buf);
}

kiln_status vk_alloc(void *dev, size_t bytes, kiln_buf **out) {
    vk_dev *d = vk_of(dev);
    kiln_status s = vk_health(d);
    if (s) return s;
    return vk_buf_alloc(d, VK_POOL_DEVICE, bytes, out);
}

void vk_free(void *dev, kiln_buf *buf) {
    vk_dev *d = vk_of(dev);
    if (!d->device) { /* torn down at exit: the blocks are gone already */
        free(buf);
        return;
    }
    vk_buf_release(d, buf);
}

kiln_status vk_scratch(vk_dev *d, size_t bytes, kiln_ref *out) {
    out->off = 0;
    return vk_buf_alloc(d, VK_POOL_DEVICE, bytes, &out->buf);
}

/* ---- transfers ---- */

static VkDeviceSize ref_offset(kiln_ref r) { return r.buf->offset + r.off; }

static kiln_status record_copy(vk_dev *d, vk_block *src, VkDeviceSize src_off, vk_block *dst, VkDeviceSize dst_off,
                               VkDeviceSize bytes) {
    VkCommandBuffer cmd;
    kiln_status s = vk_cmd(d, &cmd);
    if (s) return s;
    vk_hazard_set h = {.n = 0};
    vk_hazard_add(&h, src, src_off, bytes, 0);
    vk_hazard_add(&h, dst, dst_off, bytes, 1);
    vk_hazard_commit(d, cmd, &h);
    VkBufferCopy region = {.srcOffset = src_off, .dstOffset = dst_off, .size = bytes};
    vkCmdCopyBuffer(cmd, src->buffer, dst->buffer, 1, &region);
    return KILN_OK;
}

kiln_status vk_fill_words(vk_dev *d, kiln_ref dst, VkDeviceSize bytes, uint32_t word) {
    VkCommandBuffer cmd;
    kiln_status s = vk_cmd(d, &cmd);
    if (s || bytes == 0) return s;
    vk_hazard_set h = {.n = 0};
    vk_hazard_add(&h, dst.buf->block, ref_offset(dst), bytes, 1);
    vk_hazard_commit(d, cmd, &h);
    vk_batch *b = &d->ring[d->cur];
    int timed = d->profile && vk_profile_begin(d, b, cmd, "fill_buffer") == KILN_OK; /* KILN_VK_PROFILE */
    vkCmdFillBuffer(cmd, dst.buf->block->buffer, ref_offset(dst), bytes, word);
    if (timed) vk_profile_end(d, b, cmd);
    return vk_command_done(d);
}

kiln_status vk_upload(void *dev, kiln_ref dst, const void *src, size_t bytes) {
    vk_dev *d = vk_of(dev);
    kiln_status s = vk_health(d);
    if (s || bytes == 0) return s;
    vk_block *b = dst.buf->block;
    /* Mapped memory and nothing recorded or running that could use it: write in place. */
    if (b->mapped && vk_idle(d)) {
        memcpy((char *)b->mapped + ref_offset(dst), src, bytes);
        return KILN_OK;
    }
    /* Otherwise the copy goes into the command stream, so it lands after the work recorded
     * before it (which may still read the old contents) and before the work after it. */
    kiln_buf *stage;
    s = vk_buf_alloc(d, VK_POOL_UPLOAD, bytes, &stage);
    if (s) return s;
    memcpy((char *)stage->block->mapped + stage->offset, src, bytes);
    s = record_copy(d, stage->block, stage->offset, b, ref_offset(dst), bytes);
    if (s) {
        vk_buf_destroy_now(d, stage);
        return s;
    }
    vk_batch *batch = &d->ring[d->cur];
    batch->staged_bytes += bytes;
    vk_buf_release(d, stage);
    s = vk_command_done(d);
    if (!s && batch->staged_bytes > VK_STAGE_FLUSH) s = vk_flush(d, 0);
    return s;
}

kiln_status vk_download(void *dev, kiln_ref src, void *dst, size_t bytes) {
    vk_dev *d = vk_of(dev);
    kiln_status s = vk_health(d);
    if (s || bytes == 0) return s;
    vk_block *b = src.buf->block;
    if (b->mapped) {
        if ((s = vk_flush(d, 1))) return s;
        memcpy(dst, (char *)b->mapped + ref_offset(src), bytes);
        return vk_health(d);
    }
    kiln_buf *stage;
    s = vk_buf_alloc(d, VK_POOL_READBACK, bytes, &stage);
    if (s) return s;
    s = record_copy(d, b, ref_offset(src), stage->block, stage->offset, bytes);
    if (!s) s = vk_flush(d, 1);
    if (!s) memcpy(dst, (char *)stage->block->mapped + stage->offset, bytes);
    vk_buf_destroy_now(d, stage);
    return s ? s : vk_health(d);
}
