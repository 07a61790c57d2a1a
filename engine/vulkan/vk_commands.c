/* Command recording: kernels go into one command buffer (a "batch") that is submitted when
 * the host needs a result (download, sync) or the batch grows large — never one fence per
 * op. A small ring of batches lets the host record the next batch while the device runs
 * the previous one.
 *
 * Barriers: the hazard tracker remembers the byte ranges touched since the last barrier
 * and inserts one global memory barrier only before a command that reads what an earlier
 * command wrote, or writes what an earlier command read or wrote. Because a pipeline
 * barrier orders everything earlier in submission order on the queue, the tracker carries
 * over from one batch to the next. */
#include <stdlib.h>
#include <string.h>

#include "vk_internal.h"

#define VK_BATCH_COMMANDS 256 /* commands after which a batch is submitted without waiting */

kiln_status vk_commands_init(vk_dev *d) {
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pci.queueFamilyIndex = d->phys.queue_family;
    VkResult r = vkCreateCommandPool(d->device, &pci, NULL, &d->cmd_pool);
    if (r != VK_SUCCESS) return vk_result(r, "vulkan: vkCreateCommandPool");
    VkCommandBuffer cmds[VK_RING];
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = d->cmd_pool;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = VK_RING;
    r = vkAllocateCommandBuffers(d->device, &ai, cmds);
    if (r != VK_SUCCESS) return vk_result(r, "vulkan: vkAllocateCommandBuffers");
    for (int i = 0; i < VK_RING; i++) {
        d->ring[i].cmd = cmds[i];
        VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        r = vkCreateFence(d->device, &fci, NULL, &d->ring[i].fence);
        if (r != VK_SUCCESS) return vk_result(r, "vulkan: vkCreateFence");
    }
    return KILN_OK;
}

static void batch_release_frees(vk_dev *d, vk_batch *b) {
    for (int i = 0; i < b->n_frees; i++) vk_buf_destroy_now(d, b->frees[i]);
    b->n_frees = 0;
}

/* Waits for a submitted batch and retires it: its deferred frees, its timestamps. */
static kiln_status batch_complete(vk_dev *d, vk_batch *b) {
    if (b->state != VK_BATCH_SUBMITTED) return KILN_OK;
    VkResult r = vkWaitForFences(d->device, 1, &b->fence, VK_TRUE, UINT64_MAX);
    if (r != VK_SUCCESS) {
        d->lost = 1;
        return vk_result(r, "vulkan: waiting for the device");
    }
    vkResetFences(d->device, 1, &b->fence);
    vk_profile_collect(d, b);
    batch_release_frees(d, b);
    for (int i = 0; i < b->n_dpools; i++) vkResetDescriptorPool(d->device, b->dpools[i], 0);
    b->cur_dpool = 0;
    for (int i = 0; i < b->n_views; i++) vkDestroyBufferView(d->device, b->views[i], NULL);
    b->n_views = 0;
    b->state = VK_BATCH_IDLE;
    b->n_commands = 0;
    b->staged_bytes = 0;
    return KILN_OK;
}

void vk_commands_destroy(vk_dev *d) {
    if (!d->device) return;
    if (!d->lost) vk_flush(d, 1);
    vkDeviceWaitIdle(d->device);
    for (int i = 0; i < VK_RING; i++) {
        vk_batch *b = &d->ring[i];
        batch_release_frees(d, b);
        free(b->frees);
        free(b->query_names);
        for (int k = 0; k < b->n_dpools; k++) vkDestroyDescriptorPool(d->device, b->dpools[k], NULL);
        free(b->dpools);
        for (int k = 0; k < b->n_views; k++) vkDestroyBufferView(d->device, b->views[k], NULL);
        free(b->views);
        if (b->fence) vkDestroyFence(d->device, b->fence, NULL);
        if (b->queries) vkDestroyQueryPool(d->device, b->queries, NULL);
    }
    if (d->cmd_pool) vkDestroyCommandPool(d->device, d->cmd_pool, NULL);
    d->cmd_pool = VK_NULL_HANDLE;
}

kiln_status vk_health(vk_dev *d) {
    if (!d->device) return kiln_set_error(KILN_ERR_STATE, "vulkan: the device was closed (the process is exiting)");
    if (d->lost) return kiln_set_error(KILN_ERR_DEVICE, "vulkan: the device was lost earlier; close and reopen the context");
    const char *first;
    int n = vk_validation_failures(&first);
    if (n > 0)
        return kiln_set_error(KILN_ERR_DEVICE, "vulkan: the validation layer reported %d message(s); first: %.300s", n,
                              first);
    return KILN_OK;
}

kiln_status vk_cmd(vk_dev *d, VkCommandBuffer *out) {
    vk_batch *b = &d->ring[d->cur];
    if (b->state != VK_BATCH_RECORDING) {
        kiln_status s = batch_complete(d, b); /* the ring wrapped around: reuse the oldest */
        if (s) return s;
        VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        VkResult r = vkBeginCommandBuffer(b->cmd, &bi);
        if (r != VK_SUCCESS) return vk_result(r, "vulkan: vkBeginCommandBuffer");
        b->state = VK_BATCH_RECORDING;
        b->n_commands = 0;
        b->n_queries = 0;
        if (b->queries) vkCmdResetQueryPool(b->cmd, b->queries, 0, VK_MAX_QUERIES);
    }
    *out = b->cmd;
    return KILN_OK;
}

static void barrier(VkCommandBuffer cmd) {
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                       VK_ACCESS_TRANSFER_WRITE_BIT;
    VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vkCmdPipelineBarrier(cmd, stages, stages, 0, 1, &mb, 0, NULL, 0, NULL);
}

void vk_hazard_add(vk_hazard_set *h, const vk_block *block, VkDeviceSize off, VkDeviceSize bytes, int write) {
    if (h->n >= VK_MAX_OPERANDS + 1 || bytes == 0) return;
    vk_access *a = &h->acc[h->n++];
    a->block = block->id;
    /* Whole 32-bit words: f16 data is written as words, so neighbours sharing a word conflict. */
    a->begin = off & ~(VkDeviceSize)3;
    a->end = (off + bytes + 3) & ~(VkDeviceSize)3;
    a->write = write;
}

static int conflicts(const vk_access *a, const vk_access *b) {
    return a->block == b->block && a->begin < b->end && b->begin < a->end && (a->write || b->write);
}

void vk_hazard_commit(vk_dev *d, VkCommandBuffer cmd, const vk_hazard_set *h) {
    int need = d->n_pending + h->n > VK_MAX_PENDING;
    for (int i = 0; i < h->n && !need; i++)
        for (int j = 0; j < d->n_pending && !need; j++) need = conflicts(&h->acc[i], &d->pending[j]);
    if (need) {
        barrier(cmd);
        d->n_pending = 0;
    }
    for (int i = 0; i < h->n; i++) d->pending[d->n_pending++] = h->acc[i];
}

kiln_status vk_command_done(vk_dev *d) {
    vk_batch *b = &d->ring[d->cur];
    if (++b->n_commands >= VK_BATCH_COMMANDS) return vk_flush(d, 0);
    return KILN_OK;
}

kiln_status vk_defer_free(vk_dev *d, kiln_buf *buf) {
    VkCommandBuffer cmd;
    kiln_status s = vk_cmd(d, &cmd); /* attach to the batch being recorded */
    if (s) return s;
    vk_batch *b = &d->ring[d->cur];
    if (b->n_frees == b->cap_frees) {
        int cap = b->cap_frees ? 2 * b->cap_frees : 64;
        kiln_buf **g = realloc(b->frees, (size_t)cap * sizeof *g);
        if (!g) return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
        b->frees = g;
        b->cap_frees = cap;
    }
    b->frees[b->n_frees++] = buf;
    return KILN_OK;
}

static kiln_status submit(vk_dev *d) {
    vk_batch *b = &d->ring[d->cur];
    /* device writes become visible to the host once the fence is waited on */
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(b->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    VkResult r = vkEndCommandBuffer(b->cmd);
    if (r == VK_SUCCESS) {
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO};
        si.commandBufferCount = 1;
        si.pCommandBuffers = &b->cmd;
        r = vkQueueSubmit(d->queue, 1, &si, b->fence);
    }
    if (r != VK_SUCCESS) {
        d->lost = 1;
        return vk_result(r, "vulkan: submitting work");
    }
    b->state = VK_BATCH_SUBMITTED;
    d->cur = (d->cur + 1) % VK_RING;
    return KILN_OK;
}

kiln_status vk_flush(vk_dev *d, int wait) {
    if (d->lost || !d->device) return vk_health(d);
    kiln_status s = KILN_OK;
    if (d->ring[d->cur].state == VK_BATCH_RECORDING) s = submit(d);
    if (s || !wait) return s;
    /* oldest first: cur is the slot after the newest submission */
    for (int i = 0; i < VK_RING; i++) {
        s = batch_complete(d, &d->ring[(d->cur + i) % VK_RING]);
        if (s) return s;
    }
    return KILN_OK;
}

int vk_idle(vk_dev *d) {
    for (int i = 0; i < VK_RING; i++) {
        vk_batch *b = &d->ring[i];
        if (b->state == VK_BATCH_RECORDING) return 0;
        if (b->state == VK_BATCH_SUBMITTED) {
            if (vkGetFenceStatus(d->device, b->fence) != VK_SUCCESS) return 0;
            if (batch_complete(d, b)) return 0;
        }
    }
    return 1;
}

kiln_status vk_sync(void *dev) {
    vk_dev *d = vk_of(dev);
    kiln_status s = vk_flush(d, 1);
    return s ? s : vk_health(d);
}

/* Descriptor sets live as long as the batch that uses them: each batch owns a few pools,
 * reset together when it completes, so allocation is a bump and nothing is freed singly. */
kiln_status vk_batch_dset(vk_dev *d, VkDescriptorSetLayout layout, VkDescriptorSet *out) {
    vk_batch *b = &d->ring[d->cur];
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &layout;
    while (b->cur_dpool < b->n_dpools) {
        ai.descriptorPool = b->dpools[b->cur_dpool];
        VkResult r = vkAllocateDescriptorSets(d->device, &ai, out);
        if (r == VK_SUCCESS) return KILN_OK;
        if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL)
            return vk_result(r, "vulkan: vkAllocateDescriptorSets");
        b->cur_dpool++;
    }
    VkDescriptorPool *g = realloc(b->dpools, (size_t)(b->n_dpools + 1) * sizeof *g);
    if (!g) return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
    b->dpools = g;
    /* one pool holds a full batch of the widest kernels */
    VkDescriptorPoolSize sizes[2] = {
        {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = VK_BATCH_COMMANDS * VK_MAX_OPERANDS},
        {.type = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, .descriptorCount = VK_BATCH_COMMANDS * 2}};
    VkDescriptorPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    pci.maxSets = VK_BATCH_COMMANDS;
    pci.poolSizeCount = 2;
    pci.pPoolSizes = sizes;
    VkResult r = vkCreateDescriptorPool(d->device, &pci, NULL, &b->dpools[b->n_dpools]);
    if (r != VK_SUCCESS) return vk_result(r, "vulkan: vkCreateDescriptorPool");
    b->cur_dpool = b->n_dpools++;
    ai.descriptorPool = b->dpools[b->cur_dpool];
    r = vkAllocateDescriptorSets(d->device, &ai, out);
    return r == VK_SUCCESS ? KILN_OK : vk_result(r, "vulkan: vkAllocateDescriptorSets");
}

kiln_status vk_batch_view(vk_dev *d, VkBufferView view) {
    vk_batch *b = &d->ring[d->cur];
    if (b->n_views == b->cap_views) {
        int cap = b->cap_views ? 2 * b->cap_views : 16;
        VkBufferView *g = realloc(b->views, (size_t)cap * sizeof *g);
        if (!g) {
            vkDestroyBufferView(d->device, view, NULL);
            return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
        }
        b->views = g;
        b->cap_views = cap;
    }
    b->views[b->n_views++] = view;
    return KILN_OK;
}
