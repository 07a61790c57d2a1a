/* Pipelines and dispatches: shader modules from the embedded SPIR-V, one pipeline per
 * (shader, specialization constants), descriptor sets cached per tuple of blocks, and the
 * pipeline cache kept on disk between runs.
 *
 * Every pipeline with n storage buffers shares one pipeline layout: set 0 with bindings
 * 0..n-1 and a 128-byte push-constant range (the Vulkan minimum). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kiln/file.h"
#include "vk_internal.h"

/* ---- the on-disk pipeline cache ---- */

static int mkdirs(char *path) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        int r = mkdir(path, 0755);
        *p = '/';
        if (r != 0 && errno != EEXIST) return -1;
    }
    return 0;
}

/* $XDG_CACHE_HOME/kiln/vulkan-<device uuid>-<driver uuid>.bin, else ~/.cache/kiln/...;
 * empty when neither is set or KILN_VK_PIPELINE_CACHE=0. */
static void vk_pipeline_cache_path(vk_dev *d) {
    d->pcache_path[0] = 0;
    const char *off = getenv("KILN_VK_PIPELINE_CACHE");
    if (off && !strcmp(off, "0")) return;
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char dir[400];
    if (xdg && *xdg)
        snprintf(dir, sizeof dir, "%s/kiln", xdg);
    else if (home && *home)
        snprintf(dir, sizeof dir, "%s/.cache/kiln", home);
    else
        return;
    char uuid[2 * 2 * VK_UUID_SIZE + 2];
    int at = 0;
    for (unsigned i = 0; i < VK_UUID_SIZE; i++) at += sprintf(uuid + at, "%02x", d->phys.device_uuid[i]);
    uuid[at++] = '-';
    for (unsigned i = 0; i < VK_UUID_SIZE; i++) at += sprintf(uuid + at, "%02x", d->phys.driver_uuid[i]);
    snprintf(d->pcache_path, sizeof d->pcache_path, "%s/vulkan-%s.bin", dir, uuid);
}

/* Loads the cache file when its header matches this device and driver; anything else
 * (missing, truncated, from another driver) just starts an empty cache. */
static void *load_cache(vk_dev *d, size_t *size) {
    *size = 0;
    if (!d->pcache_path[0]) return NULL;
    FILE *f = fopen(d->pcache_path, "rb");
    if (!f) return NULL;
    void *data = NULL;
    long len = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (len >= 32 && len < (1L << 30) && fseek(f, 0, SEEK_SET) == 0 && (data = malloc((size_t)len)) &&
        fread(data, 1, (size_t)len, f) == (size_t)len) {
        const unsigned char *h = data;
        uint32_t hsize, version, vendor, device;
        memcpy(&hsize, h, 4);
        memcpy(&version, h + 4, 4);
        memcpy(&vendor, h + 8, 4);
        memcpy(&device, h + 12, 4);
        if (hsize >= 32 && version == VK_PIPELINE_CACHE_HEADER_VERSION_ONE && vendor == d->phys.props.vendorID &&
            device == d->phys.props.deviceID && !memcmp(h + 16, d->phys.props.pipelineCacheUUID, VK_UUID_SIZE))
            *size = (size_t)len;
    }
    fclose(f);
    if (!*size) {
        free(data);
        data = NULL;
    }
    return data;
}

/* Writes the cache whole (kiln/file.h). Failures are not errors: the next run compiles
 * again. Each save has a temporary file of its own, so two devices of one kind saving at
 * once (threads) cannot interleave their bytes: the last rename wins. */
void vk_pipeline_cache_save(vk_dev *d) {
    if (!d->pcache || !d->pcache_dirty || !d->pcache_path[0]) return;
    size_t size = 0;
    if (vkGetPipelineCacheData(d->device, d->pcache, &size, NULL) != VK_SUCCESS || size == 0) return;
    void *data = malloc(size);
    if (!data) return;
    char dir[512];
    snprintf(dir, sizeof dir, "%s", d->pcache_path);
    if (vkGetPipelineCacheData(d->device, d->pcache, &size, data) == VK_SUCCESS && mkdirs(dir) == 0)
        (void)kiln_file_write_all(d->pcache_path, data, size, NULL, 0);
    free(data);
    d->pcache_dirty = 0;
}

/* ---- layouts ---- */

/* The layout for n bindings whose texel_mask bits are uniform texel buffers (created on
 * first use; kiln uses only a handful). */
static kiln_status get_layout(vk_dev *d, int n, uint32_t texel_mask, vk_layout **out) {
    for (int i = 0; i < d->n_layouts; i++)
        if (d->layouts[i].n == n && d->layouts[i].texel_mask == texel_mask) {
            *out = &d->layouts[i];
            return KILN_OK;
        }
    if (d->n_layouts == VK_MAX_LAYOUTS) return kiln_set_error(KILN_ERR_STATE, "vulkan: too many pipeline layouts");
    VkDescriptorSetLayoutBinding bindings[VK_MAX_OPERANDS];
    for (int i = 0; i < n; i++) {
        bindings[i].binding = (uint32_t)i;
        bindings[i].descriptorType = texel_mask & (1u << i) ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER
                                                            : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        bindings[i].descriptorCount = 1;
        bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
        bindings[i].pImmutableSamplers = NULL;
    }
    vk_layout *l = &d->layouts[d->n_layouts];
    VkDescriptorSetLayoutCreateInfo lci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    lci.bindingCount = (uint32_t)n;
    lci.pBindings = bindings;
    VkResult r = vkCreateDescriptorSetLayout(d->device, &lci, NULL, &l->set);
    if (r != VK_SUCCESS) return vk_result(r, "vulkan: vkCreateDescriptorSetLayout");
    VkPushConstantRange push = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = VK_PUSH_BYTES};
    VkPipelineLayoutCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pci.setLayoutCount = 1;
    pci.pSetLayouts = &l->set;
    pci.pushConstantRangeCount = 1;
    pci.pPushConstantRanges = &push;
    r = vkCreatePipelineLayout(d->device, &pci, NULL, &l->pipe);
    if (r != VK_SUCCESS) {
        vkDestroyDescriptorSetLayout(d->device, l->set, NULL);
        return vk_result(r, "vulkan: vkCreatePipelineLayout");
    }
    l->n = n;
    l->texel_mask = texel_mask;
    d->n_layouts++;
    *out = l;
    return KILN_OK;
}

kiln_status vk_pipelines_init(vk_dev *d) {
    vk_pipeline_cache_path(d);
    size_t size;
    void *data = load_cache(d, &size);
    VkPipelineCacheCreateInfo cci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    cci.initialDataSize = size;
    cci.pInitialData = data;
    VkResult r = vkCreatePipelineCache(d->device, &cci, NULL, &d->pcache);
    if (r != VK_SUCCESS && data) { /* a rejected file: start empty */
        cci.initialDataSize = 0;
        cci.pInitialData = NULL;
        r = vkCreatePipelineCache(d->device, &cci, NULL, &d->pcache);
    }
    free(data);
    if (r != VK_SUCCESS) return vk_result(r, "vulkan: vkCreatePipelineCache");
    return KILN_OK;
}

void vk_pipelines_destroy(vk_dev *d) {
    if (!d->device) return;
    vk_pipeline_cache_save(d);
    for (int i = 0; i < d->n_pipelines; i++) vkDestroyPipeline(d->device, d->pipelines[i].handle, NULL);
    free(d->pipelines);
    d->pipelines = NULL;
    d->n_pipelines = 0;
    for (int i = 0; i < d->n_layouts; i++) {
        vkDestroyPipelineLayout(d->device, d->layouts[i].pipe, NULL);
        vkDestroyDescriptorSetLayout(d->device, d->layouts[i].set, NULL);
    }
    d->n_layouts = 0;
    if (d->pcache) vkDestroyPipelineCache(d->device, d->pcache, NULL);
    d->pcache = VK_NULL_HANDLE;
}

static kiln_status get_pipeline(vk_dev *d, vk_shader_id shader, const uint32_t *spec, int n_spec,
                                const vk_layout *layout, VkPipeline *out) {
    int n_bindings = layout->n;
    for (int i = 0; i < d->n_pipelines; i++) {
        vk_pipeline *p = &d->pipelines[i];
        if (p->shader == shader && p->n_spec == n_spec && p->n_bindings == n_bindings &&
            p->texel_mask == layout->texel_mask && !memcmp(p->spec, spec, (size_t)n_spec * sizeof *spec)) {
            *out = p->handle;
            return KILN_OK;
        }
    }
    if (d->n_pipelines == d->cap_pipelines) {
        int cap = d->cap_pipelines ? 2 * d->cap_pipelines : 32;
        vk_pipeline *g = realloc(d->pipelines, (size_t)cap * sizeof *g);
        if (!g) return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
        d->pipelines = g;
        d->cap_pipelines = cap;
    }
    const kiln_vk_shader *sh = &kiln_vk_shaders[shader];
    VkShaderModuleCreateInfo mci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    mci.codeSize = sh->words * 4;
    mci.pCode = sh->code;
    VkShaderModule module;
    VkResult r = vkCreateShaderModule(d->device, &mci, NULL, &module);
    if (r != VK_SUCCESS) return vk_result(r, "vulkan: vkCreateShaderModule");
    VkSpecializationMapEntry entries[VK_MAX_SPEC];
    for (int i = 0; i < n_spec; i++) {
        entries[i].constantID = (uint32_t)i;
        entries[i].offset = (uint32_t)(4 * i);
        entries[i].size = 4;
    }
    VkSpecializationInfo si = {
        .mapEntryCount = (uint32_t)n_spec, .pMapEntries = entries, .dataSize = (size_t)n_spec * 4, .pData = spec};
    VkComputePipelineCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    ci.stage.module = module;
    ci.stage.pName = "main";
    ci.stage.pSpecializationInfo = n_spec ? &si : NULL;
    ci.layout = layout->pipe;
    VkPipeline pipe;
    r = vkCreateComputePipelines(d->device, d->pcache, 1, &ci, NULL, &pipe);
    vkDestroyShaderModule(d->device, module, NULL);
    if (r != VK_SUCCESS) return vk_result(r, "vulkan: creating the compute pipeline");
    vk_pipeline *p = &d->pipelines[d->n_pipelines++];
    p->shader = shader;
    memset(p->spec, 0, sizeof p->spec);
    memcpy(p->spec, spec, (size_t)n_spec * sizeof *spec);
    p->n_spec = n_spec;
    p->n_bindings = n_bindings;
    p->texel_mask = layout->texel_mask;
    p->handle = pipe;
    d->pcache_dirty = 1;
    *out = pipe;
    return KILN_OK;
}

/* ---- dispatch ---- */

vk_operand vk_in(kiln_ref r, int64_t count, uint32_t elem) {
    return (vk_operand){.ref = r, .bytes = (size_t)count * elem, .elem = elem};
}

vk_operand vk_out(kiln_ref r, int64_t count, uint32_t elem) {
    return (vk_operand){.ref = r, .bytes = (size_t)count * elem, .elem = elem, .write = 1};
}

vk_operand vk_texels(kiln_ref r, int64_t count) {
    return (vk_operand){.ref = r, .bytes = (size_t)count * 16, .elem = 16, .texel = VK_TEXEL_F32};
}

vk_operand vk_texels_u32(kiln_ref r, int64_t count) {
    return (vk_operand){.ref = r, .bytes = (size_t)count * 16, .elem = 16, .texel = VK_TEXEL_U32};
}

vk_operand vk_texels_f16(kiln_ref r, int64_t count) {
    return (vk_operand){.ref = r, .bytes = (size_t)count * 8, .elem = 8, .texel = VK_TEXEL_F16};
}

void vk_grid_1d(const vk_dev *d, uint64_t groups, uint32_t out[3]) {
    uint64_t maxx = d->caps.max_wg_count[0];
    if (groups == 0) groups = 1;
    if (groups <= maxx) {
        out[0] = (uint32_t)groups;
        out[1] = 1;
    } else {
        out[1] = (uint32_t)((groups + maxx - 1) / maxx);
        out[0] = (uint32_t)((groups + out[1] - 1) / out[1]);
    }
    out[2] = 1;
}

kiln_status vk_dispatch(vk_dev *d, vk_launch *l) {
    kiln_status s = vk_health(d);
    if (s) return s;
    uint32_t texel_mask = 0;
    for (int i = 0; i < l->n_ops && i < VK_MAX_OPERANDS; i++)
        if (l->ops[i].texel) texel_mask |= 1u << i;
    if ((s = vk_shader_check_launch(l->shader, l->n_ops, texel_mask))) return s;
    const char *name = kiln_vk_shaders[l->shader].name;
    if (l->push_bytes > VK_PUSH_BYTES || l->push_bytes < 4u * (uint32_t)l->n_ops)
        return kiln_set_error(KILN_ERR_ARGUMENT, "vulkan: %s: bad push-constant size %u", name, l->push_bytes);
    for (int i = 0; i < 3; i++)
        if (l->groups[i] == 0 || l->groups[i] > d->caps.max_wg_count[i])
            return kiln_set_error(KILN_ERR_UNSUPPORTED,
                                  "vulkan: %s: %u workgroups along axis %d exceed the device's %u", name, l->groups[i],
                                  i, d->caps.max_wg_count[i]);
    uint32_t *offsets = l->push;
    VkDescriptorBufferInfo infos[VK_MAX_OPERANDS];
    VkBufferView views[VK_MAX_OPERANDS];
    vk_hazard_set h = {.n = 0};
    VkDeviceSize ssbo_align = d->caps.min_ssbo_align ? d->caps.min_ssbo_align : 1;
    VkDeviceSize texel_align = d->caps.min_texel_align > 16 ? d->caps.min_texel_align : 16;
    for (int i = 0; i < l->n_ops; i++) {
        const vk_operand *o = &l->ops[i];
        if (!o->ref.buf) {
            /* An absent operand still needs a valid binding. Writable ones get a slot of their
             * own in the dummy block, tracked like any output, so that two dispatches never
             * "write" the same dummy bytes without a barrier (the synchronization validation
             * layer assumes a shader writes everything it binds writable). */
            VkDeviceSize slot = o->write ? 1 + d->dummy_next++ % (VK_DUMMY_SLOTS - 1) : 0;
            infos[i].buffer = d->dummy_block->buffer;
            infos[i].offset = slot * VK_DUMMY_SLOT_BYTES;
            infos[i].range = VK_DUMMY_SLOT_BYTES;
            offsets[i] = 0xffffffffu;
            if (o->write) vk_hazard_add(&h, d->dummy_block, infos[i].offset, VK_DUMMY_SLOT_BYTES, 1);
            continue;
        }
        const vk_block *blk = o->ref.buf->block;
        VkDeviceSize at = o->ref.buf->offset + o->ref.off;
        VkDeviceSize align = o->texel ? texel_align : ssbo_align;
        VkDeviceSize base = at / align * align;
        if ((at - base) % o->elem)
            return kiln_set_error(KILN_ERR_ARGUMENT, "vulkan: %s: operand %d at byte %llu is not a whole element", name,
                                  i, (unsigned long long)at);
        /* never empty; whole 32-bit words (shaders read f16 as packed words, so an odd
         * count of halves still needs its last word) or texels; never past the block */
        VkDeviceSize unit = o->texel ? o->elem : 4;
        VkDeviceSize end = (at + (o->bytes ? o->bytes : o->elem) + unit - 1) / unit * unit;
        if (end > blk->size) end = blk->size;
        /* kernels that may meet tensors larger than one binding split their work first
         * (vk_split.c); reaching here with one is a kernel that does not */
        if (o->texel ? (end - base) / unit > d->caps.max_texel_elements : end - base > d->caps.max_storage_range)
            return kiln_set_error(
                KILN_ERR_UNSUPPORTED,
                "vulkan: %s: operand %d spans %.1f KiB, more than one %s binding of %s addresses "
                "(%.1f KiB); this kernel does not split its work: use smaller tensors",
                name, i, (double)(end - base) / 1024.0, o->texel ? "texel" : "storage", d->name,
                (double)(o->texel ? (uint64_t)d->caps.max_texel_elements * unit : d->caps.max_storage_range) / 1024.0);
        infos[i].buffer = blk->buffer;
        infos[i].offset = base;
        infos[i].range = end - base;
        offsets[i] = (uint32_t)((at - base) / o->elem);
        vk_hazard_add(&h, blk, base, end - base, o->write);
    }
    vk_layout *layout = NULL;
    VkPipeline pipe = VK_NULL_HANDLE;
    VkDescriptorSet set = VK_NULL_HANDLE;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    if ((s = get_layout(d, l->n_ops, texel_mask, &layout))) return s;
    if ((s = get_pipeline(d, l->shader, l->spec, l->n_spec, layout, &pipe))) return s;
    if ((s = vk_cmd(d, &cmd))) return s;
    if ((s = vk_batch_dset(d, layout->set, &set))) return s;
    VkWriteDescriptorSet writes[VK_MAX_OPERANDS];
    for (int i = 0; i < l->n_ops; i++) {
        memset(&writes[i], 0, sizeof writes[i]);
        writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
        writes[i].dstSet = set;
        writes[i].dstBinding = (uint32_t)i;
        writes[i].descriptorCount = 1;
        if (l->ops[i].texel) {
            VkBufferViewCreateInfo vci = {.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
            vci.buffer = infos[i].buffer;
            vci.format = l->ops[i].texel == VK_TEXEL_F16   ? VK_FORMAT_R16G16B16A16_SFLOAT
                         : l->ops[i].texel == VK_TEXEL_U32 ? VK_FORMAT_R32G32B32A32_UINT
                                                           : VK_FORMAT_R32G32B32A32_SFLOAT;
            vci.offset = infos[i].offset;
            vci.range = infos[i].range;
            VkResult r = vkCreateBufferView(d->device, &vci, NULL, &views[i]);
            if (r != VK_SUCCESS) return vk_result(r, "vulkan: vkCreateBufferView");
            if ((s = vk_batch_view(d, views[i]))) return s;
            writes[i].descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
            writes[i].pTexelBufferView = &views[i];
        } else {
            writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
            writes[i].pBufferInfo = &infos[i];
        }
    }
    vkUpdateDescriptorSets(d->device, (uint32_t)l->n_ops, writes, 0, NULL);
    vk_hazard_commit(d, cmd, &h);
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout->pipe, 0, 1, &set, 0, NULL);
    vkCmdPushConstants(cmd, layout->pipe, VK_SHADER_STAGE_COMPUTE_BIT, 0, l->push_bytes, l->push);
    vk_batch *b = &d->ring[d->cur];
    int timed = d->profile && vk_profile_begin(d, b, cmd, name) == KILN_OK;
    vkCmdDispatch(cmd, l->groups[0], l->groups[1], l->groups[2]);
    if (timed) vk_profile_end(d, b, cmd);
    return vk_command_done(d);
}

kiln_status vk_run_flat(vk_dev *d, vk_launch *l, uint64_t items) {
    if (items == 0) return KILN_OK;
    uint32_t wg = vk_flat_wg(d);
    l->spec[0] = wg;
    if (l->n_spec < 1) l->n_spec = 1;
    vk_grid_1d(d, (items + wg - 1) / wg, l->groups);
    return vk_dispatch(d, l);
}
