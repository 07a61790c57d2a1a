/* kiln's GPT tensors in Hugging Face's and llama.cpp's names (gpt_names.h). */
#include "model/gpt/gpt_names.h"

#include <stdio.h>
#include <string.h>

/* The names of one format: the model's own, then a block's (after its layer prefix). */
typedef struct name_table {
    const char *embd, *head, *norm_f, *rope_freqs, *layer; /* layer: printf format of the prefix */
    const char *ln1, *ln2, *q, *k, *v, *o, *q_norm, *k_norm, *gate, *up, *down;
} name_table;

static const name_table hf = {"model.embed_tokens.weight", "lm_head.weight", "model.norm.weight", NULL,
                              "model.layers.%d.", "input_layernorm.weight", "post_attention_layernorm.weight",
                              "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                              "self_attn.q_norm.weight", "self_attn.k_norm.weight", "mlp.gate_proj.weight",
                              "mlp.up_proj.weight", "mlp.down_proj.weight"};
static const name_table gguf = {"token_embd.weight", "output.weight", "output_norm.weight", "rope_freqs.weight",
                                "blk.%d.", "attn_norm.weight", "ffn_norm.weight", "attn_q", "attn_k", "attn_v",
                                "attn_output", "attn_q_norm.weight", "attn_k_norm.weight", "ffn_gate.weight",
                                "ffn_up.weight", "ffn_down.weight"};

gpt_names gpt_names_for(gpt_names_format format, const gpt_config *cfg) {
    gpt_names n = {.format = format, .block = gpt_block_config(cfg), .prefix = ""};
    return n;
}

static void piece(import_recipe *r, const char *layer, const char *name, const char *suffix, int64_t rows,
                  int64_t unpermute_hd) {
    import_piece *p = &r->piece[r->n++];
    snprintf(p->name, sizeof p->name, "%s%s%s", layer, name, suffix);
    p->rows = rows;
    p->unpermute_hd = unpermute_hd;
}

/* The model's own tensors. */
static int own_recipe(const gpt_names *n, const name_table *t, const param_spec *s, import_recipe *r) {
    switch (s->slot) {
    case GPT_SLOT_WTE: piece(r, "", t->embd, "", s->shape[0], 0); return 0;
    case GPT_SLOT_LM_HEAD: piece(r, "", t->head, "", s->shape[0], 0); return 0;
    case GPT_SLOT_LN_F_W: piece(r, "", t->norm_f, "", s->shape[0], 0); return 0;
    case GPT_SLOT_ROPE_FREQS:
        if (!n->rope_freqs_file) return 1;
        piece(r, "", t->rope_freqs, "", s->shape[0], 0);
        return 0;
    default: return -1;
    }
}

/* A block's tensors; -1 for one these formats have no place for. */
static int block_recipe(const gpt_names *n, const name_table *t, const param_spec *s, import_recipe *r) {
    const block_config *b = &n->block;
    int64_t hd = block_head_dim(b), q_rows = (int64_t)b->n_head * hd, kv_rows = (int64_t)block_kv_heads(b) * hd;
    int64_t F = block_ffn(b), C = b->n_embd, perm = n->permuted ? hd : 0;
    char layer[32];
    snprintf(layer, sizeof layer, t->layer, s->layer);
    int weight = s->slot == BLOCK_QKV_W || s->slot == BLOCK_ATTN_PROJ_W;
    const char *suffix = weight ? ".weight" : ".bias";
    r->transpose = s->ndim == 2;
    switch (s->slot) {
    case BLOCK_LN1_W: piece(r, layer, t->ln1, "", C, 0); return 0;
    case BLOCK_LN2_W: piece(r, layer, t->ln2, "", C, 0); return 0;
    case BLOCK_QKV_W:
    case BLOCK_QKV_B:
        piece(r, layer, t->q, suffix, q_rows, perm);
        piece(r, layer, t->k, suffix, kv_rows, perm);
        piece(r, layer, t->v, suffix, kv_rows, 0);
        return 0;
    case BLOCK_ATTN_PROJ_W:
    case BLOCK_ATTN_PROJ_B: piece(r, layer, t->o, suffix, C, 0); return 0;
    case BLOCK_Q_NORM_W: piece(r, layer, t->q_norm, "", hd, 0); return 0;
    case BLOCK_K_NORM_W: piece(r, layer, t->k_norm, "", hd, 0); return 0;
    case BLOCK_FC_W:
        if (b->o.mlp != BLOCK_MLP_SWIGLU) return -1;
        piece(r, layer, t->gate, "", F, 0);
        piece(r, layer, t->up, "", F, 0);
        return 0;
    case BLOCK_MLP_PROJ_W: piece(r, layer, t->down, "", C, 0); return 0;
    default: return -1;
    }
}

int gpt_names_recipe(const void *names, const param_spec *s, import_recipe *r, char *err, size_t errlen) {
    const gpt_names *n = names;
    memset(r, 0, sizeof *r);
    if (n->format == GPT_NAMES_HF_GPT2) { /* kiln's own names and layout */
        import_piece *p = &r->piece[r->n++];
        snprintf(p->name, sizeof p->name, "%s%s", n->prefix, s->name);
        p->rows = s->shape[0];
        return 0;
    }
    const name_table *t = n->format == GPT_NAMES_GGUF ? &gguf : &hf;
    int rc = s->layer >= 0 ? block_recipe(n, t, s, r) : own_recipe(n, t, s, r);
    if (rc < 0)
        snprintf(err, errlen, "kiln's %s has no place in %s", s->name,
                 n->format == GPT_NAMES_GGUF ? "llama.cpp's llama, qwen2 and qwen3" : "Hugging Face's Llama family");
    return rc;
}
