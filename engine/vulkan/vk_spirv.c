/* Reflection of what vk_dispatch relies on in a SPIR-V module: the buffers it binds
 * (distinct Binding decorations of its storage and uniform texel buffer variables) and the
 * length of its push block's first member, off[], which push.h sizes with the kernel's
 * operand count. Comparing the two catches a shader whose bindings and push.h disagree;
 * vk_shaders.c compares a launch with the first.
 *
 * Only the few instructions that declare those are read (SPIR-V specification, section 3
 * for the enumerants and 2.3 for the layout: a 5-word header, then instructions whose first
 * word is (word count << 16) | opcode). */
#include <stdlib.h>

#include "core/internal.h"
#include "vk_shaders.h"

enum {
    SPV_MAGIC = 0x07230203,
    SPV_HEADER_WORDS = 5,
    /* opcodes */
    SPV_OP_TYPE_IMAGE = 25,
    SPV_OP_TYPE_SAMPLED_IMAGE = 27,
    SPV_OP_TYPE_ARRAY = 28,
    SPV_OP_TYPE_STRUCT = 30,
    SPV_OP_TYPE_POINTER = 32,
    SPV_OP_CONSTANT = 43,
    SPV_OP_VARIABLE = 59,
    SPV_OP_DECORATE = 71,
    /* decorations */
    SPV_DEC_BUFFER_BLOCK = 3,
    SPV_DEC_BINDING = 33,
    SPV_DEC_DESCRIPTOR_SET = 34,
    /* storage classes */
    SPV_SC_UNIFORM_CONSTANT = 0,
    SPV_SC_UNIFORM = 2,
    SPV_SC_PUSH_CONSTANT = 9,
    SPV_SC_STORAGE_BUFFER = 12,
    /* image dimensionality */
    SPV_DIM_BUFFER = 5,
};

/* Bindings kiln can tell apart: more than any kernel binds (VK_MAX_OPERANDS). */
#define SPV_MAX_BINDING 32

/* What the module says about one result id. */
typedef struct spv_id {
    uint32_t op;          /* the instruction that defines it (0: none of those read here) */
    uint32_t a, b;        /* pointer: storage class, pointee; array: element, length id; struct:
                             first member, member count; image: dim; sampled image: image;
                             constant: value; variable: pointer type, storage class */
    int64_t binding, set; /* -1 when not decorated */
    int buffer_block;     /* decorated BufferBlock (a storage buffer before SPIR-V 1.3) */
} spv_id;

static kiln_status malformed(const char *name, const char *why) {
    return kiln_set_error(KILN_ERR_STATE, "vulkan: shader '%s': %s", name, why);
}

/* Records the result id and operands of the instructions that declare buffers and the push
 * block. */
static kiln_status read_ids(const char *name, const uint32_t *code, size_t words, spv_id *ids, uint32_t bound) {
    for (size_t at = SPV_HEADER_WORDS; at < words;) {
        uint32_t count = code[at] >> 16, op = code[at] & 0xffff;
        if (count == 0 || at + count > words) return malformed(name, "its SPIR-V ends inside an instruction");
        const uint32_t *in = code + at;
        at += count;
        uint32_t id = 0, a = 0, b = 0;
        switch (op) {
        case SPV_OP_DECORATE:
            if (count < 3 || in[1] >= bound) return malformed(name, "a decoration of an unknown id");
            if (in[2] == SPV_DEC_BINDING && count >= 4) ids[in[1]].binding = in[3];
            if (in[2] == SPV_DEC_DESCRIPTOR_SET && count >= 4) ids[in[1]].set = in[3];
            if (in[2] == SPV_DEC_BUFFER_BLOCK) ids[in[1]].buffer_block = 1;
            continue;
        case SPV_OP_TYPE_POINTER:
        case SPV_OP_TYPE_ARRAY:
            if (count != 4) return malformed(name, "a pointer or array type of the wrong size");
            id = in[1], a = in[2], b = in[3];
            break;
        case SPV_OP_TYPE_STRUCT:
            if (count < 2) return malformed(name, "a struct type of the wrong size");
            id = in[1], a = count > 2 ? in[2] : 0, b = count - 2;
            break;
        case SPV_OP_TYPE_IMAGE:
            if (count < 9) return malformed(name, "an image type of the wrong size");
            id = in[1], a = in[3];
            break;
        case SPV_OP_TYPE_SAMPLED_IMAGE:
            if (count != 3) return malformed(name, "a sampled image type of the wrong size");
            id = in[1], a = in[2];
            break;
        case SPV_OP_CONSTANT:
            if (count < 4) return malformed(name, "a constant of the wrong size");
            id = in[2], a = in[3];
            break;
        case SPV_OP_VARIABLE:
            if (count < 4) return malformed(name, "a variable of the wrong size");
            id = in[2], a = in[1], b = in[3];
            break;
        default:
            continue;
        }
        if (id >= bound) return malformed(name, "an id beyond the module's bound");
        ids[id].op = op;
        ids[id].a = a;
        ids[id].b = b;
    }
    return KILN_OK;
}

/* The id's entry when it is defined by `op`, else NULL. */
static const spv_id *defined_as(const spv_id *ids, uint32_t bound, uint32_t id, uint32_t op) {
    return id < bound && ids[id].op == op ? &ids[id] : NULL;
}

/* A uniform texel buffer: an image of dimension Buffer, or that image with a sampler
 * (GLSL's samplerBuffer). */
static int is_texel_buffer(const spv_id *ids, uint32_t bound, uint32_t type) {
    const spv_id *sampled = defined_as(ids, bound, type, SPV_OP_TYPE_SAMPLED_IMAGE);
    const spv_id *image = defined_as(ids, bound, sampled ? sampled->a : type, SPV_OP_TYPE_IMAGE);
    return image && image->a == SPV_DIM_BUFFER;
}

/* What a variable of `storage` class and `type` is to vk_dispatch. */
enum { NOT_A_BUFFER = 0, STORAGE_BUFFER = 1, TEXEL_BUFFER = 2 };
static int buffer_kind(const spv_id *ids, uint32_t bound, uint32_t storage, uint32_t type) {
    if (storage == SPV_SC_STORAGE_BUFFER) return STORAGE_BUFFER;
    if (storage == SPV_SC_UNIFORM && type < bound && ids[type].buffer_block) return STORAGE_BUFFER;
    if (storage == SPV_SC_UNIFORM_CONSTANT && is_texel_buffer(ids, bound, type)) return TEXEL_BUFFER;
    return NOT_A_BUFFER;
}

/* The length of the push block's first member, off[], or -1 when it is not an array of
 * constant length. */
static int64_t push_offsets(const spv_id *ids, uint32_t bound, uint32_t block_type) {
    const spv_id *block = defined_as(ids, bound, block_type, SPV_OP_TYPE_STRUCT);
    const spv_id *off = block && block->b > 0 ? defined_as(ids, bound, block->a, SPV_OP_TYPE_ARRAY) : NULL;
    const spv_id *length = off ? defined_as(ids, bound, off->b, SPV_OP_CONSTANT) : NULL;
    return length ? (int64_t)length->a : -1;
}

kiln_status vk_spirv_reflect(const char *name, const uint32_t *code, size_t words, vk_spirv_interface *out) {
    if (!code || words < SPV_HEADER_WORDS || code[0] != SPV_MAGIC)
        return malformed(name, "not a SPIR-V module (no magic number)");
    uint32_t bound = code[3];
    if (bound == 0 || bound > words * 4) return malformed(name, "its id bound does not fit the module");
    spv_id *ids = calloc(bound, sizeof *ids);
    if (!ids) return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
    for (uint32_t i = 0; i < bound; i++) ids[i].binding = ids[i].set = -1;
    kiln_status s = read_ids(name, code, words, ids, bound);
    int kinds[SPV_MAX_BINDING] = {0}; /* per binding: the kinds of buffer declared there, or'ed */
    int64_t push = -1;
    int n_push = 0;
    for (uint32_t v = 0; !s && v < bound; v++) {
        if (ids[v].op != SPV_OP_VARIABLE) continue;
        const spv_id *pointer = defined_as(ids, bound, ids[v].a, SPV_OP_TYPE_POINTER);
        if (!pointer) {
            s = malformed(name, "a variable whose type is not a pointer");
            break;
        }
        uint32_t storage = ids[v].b, type = pointer->b;
        if (storage == SPV_SC_PUSH_CONSTANT) {
            push = push_offsets(ids, bound, type);
            n_push++;
            continue;
        }
        int kind = buffer_kind(ids, bound, storage, type);
        if (kind == NOT_A_BUFFER) {
            if (ids[v].binding >= 0)
                s = kiln_set_error(KILN_ERR_STATE,
                                   "vulkan: shader '%s': binding %lld is neither a storage buffer nor a "
                                   "uniform texel buffer, the only kinds vk_dispatch binds",
                                   name, (long long)ids[v].binding);
            continue;
        }
        if (ids[v].binding < 0 || ids[v].binding >= SPV_MAX_BINDING || ids[v].set != 0)
            s = kiln_set_error(KILN_ERR_STATE,
                               "vulkan: shader '%s': a buffer at binding %lld of set %lld; vk_dispatch "
                               "binds set 0, bindings 0 to %d",
                               name, (long long)ids[v].binding, (long long)ids[v].set, SPV_MAX_BINDING - 1);
        else
            kinds[ids[v].binding] |= kind;
    }
    free(ids);
    if (s) return s;
    if (n_push != 1 || push < 0)
        return malformed(name, "no push block starting with an array of operand offsets (push.h)");
    int bindings = 0;
    for (int i = 0; i < SPV_MAX_BINDING; i++)
        if (kinds[i]) bindings = i + 1;
    uint32_t texel_mask = 0;
    for (int i = 0; i < bindings; i++) {
        if (kinds[i] != STORAGE_BUFFER && kinds[i] != TEXEL_BUFFER)
            return kiln_set_error(KILN_ERR_STATE,
                                  "vulkan: shader '%s': binding %d is %s; vk_dispatch binds operand i at "
                                  "binding i, each one buffer",
                                  name, i, kinds[i] ? "both a storage and a texel buffer" : "missing");
        if (kinds[i] == TEXEL_BUFFER) texel_mask |= 1u << i;
    }
    *out = (vk_spirv_interface){.bindings = bindings, .texel_mask = texel_mask, .push_operands = (int)push};
    return KILN_OK;
}

kiln_status vk_spirv_check(const char *name, const uint32_t *code, size_t words, int max_operands,
                           vk_spirv_interface *out) {
    kiln_status s = vk_spirv_reflect(name, code, words, out);
    if (s) return s;
    if (out->bindings != out->push_operands)
        return kiln_set_error(KILN_ERR_STATE,
                              "vulkan: shader '%s' binds %d buffers but its push block has %d operand "
                              "offsets: the shader's bindings and its push block (core/kernel_slots.def) disagree",
                              name, out->bindings, out->push_operands);
    if (out->bindings > max_operands)
        return kiln_set_error(KILN_ERR_STATE, "vulkan: shader '%s' binds %d buffers; kiln binds at most %d per kernel",
                              name, out->bindings, max_operands);
    return KILN_OK;
}
