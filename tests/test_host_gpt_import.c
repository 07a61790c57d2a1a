/* Another tool's tensors into kiln's GPT (model/gpt/gpt_import.h, gpt_names.h, gpt_hf.h):
 * - llama's GGUF row order: import_file_row is convert_hf_to_gguf.py's LlamaModel.permute
 *   (reshape(heads, 2, hd / 2, in).swapaxes(1, 2)), written here as index arithmetic;
 * - a small Llama-family model from GGUF-named f32 pieces (q, k, v, gate, up stacked and
 *   transposed, llama's q/k rows un-permuted) holds each file value at its place in kiln's
 *   layout, and with Q8_0 q/k/v the quantized c_attn keeps the file's block rows in HF's
 *   order, without an f32 tensor; with v in Q5_0 beside Q8_0 q and k, in two parts of their
 *   own formats, counted as such in the bytes decoding reads per token;
 * - the checks name the file, the tensor and kiln's tensor in one line: a missing piece, a
 *   misshapen one, a 1-D quantized one, rows that are not whole heads;
 * - Hugging Face folders: a tensor in two shards, an index naming a file outside the
 *   folder, a missing shard, each refused in one line. */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiln/quant.h"
#include "model/gpt/gpt_hf.h"
#include "model/gpt/gpt_import.h"
#include "model/gpt/gpt_names.h"
#include "model/gpt/gpt_quantize.h"
#include "testfile.h"
#include "testutil.h"

START_TEST(file_row_is_llama_permute) {
    enum { HEADS = 3, HD = 8 };
    /* permute: out = w.reshape(H, 2, HD/2).swapaxes(1, 2).reshape(...): out[h][b][a] = w[h][a][b] */
    int64_t gguf_row_of_hf[HEADS * HD];
    for (int h = 0; h < HEADS; h++)
        for (int b = 0; b < HD / 2; b++)
            for (int a = 0; a < 2; a++) gguf_row_of_hf[h * HD + a * (HD / 2) + b] = h * HD + b * 2 + a;
    import_piece p = {.rows = HEADS * HD, .unpermute_hd = HD};
    for (int r = 0; r < HEADS * HD; r++) ck_assert_int_eq(import_file_row(&p, r), gguf_row_of_hf[r]);
    p.unpermute_hd = 0;
    for (int r = 0; r < HEADS * HD; r++) ck_assert_int_eq(import_file_row(&p, r), r);
}
END_TEST

/* A tiny llama: C 32, 2 layers, 2 heads of 16 over 1 KV head, F 64, vocab 40, tied. */
enum { C = 32, NH = 2, KV = 1, HD = 16, F = 64, V = 40, NL = 2 };

static gpt_config tiny(void) {
    gpt_config c = {.n_layer = NL, .n_head = NH, .n_embd = C, .n_positions = 16, .vocab_size = V, .ln_eps = 1e-5f,
                    .block = block_options_default(), .n_kv_head = KV, .head_dim = HD, .n_ffn = F,
                    .position = GPT_POSITION_ROPE};
    c.block.norm_type = BLOCK_NORM_TYPE_RMSNORM;
    c.block.mlp = BLOCK_MLP_SWIGLU;
    c.block.bias = BLOCK_BIAS_NONE;
    c.block.rope = 1;
    c.block.rope_layout = 1;
    char err[256];
    ck_assert_msg(gpt_config_check(&c, err, sizeof err) == 0, "%s", err);
    return c;
}

/* The value the file holds at (tensor k, row r, column c). */
static float value(int k, int64_t r, int64_t c) { return (float)(k * 10000 + r * 100 + c) * 1e-4f; }

typedef struct fixture {
    import_tensor t[64];
    float *data[64];
    char names[64][64];
    size_t n;
} fixture;

/* A tensor [rows, cols] (cols 0: 1-D) whose file row fr holds value(k, hf row, c): llama's
 * q and k rows permuted as the file stores them. */
static void add(fixture *f, const char *name, int64_t rows, int64_t cols, int64_t permute_hd) {
    int k = (int)f->n;
    int64_t w = cols ? cols : 1;
    float *d = malloc((size_t)(rows * w) * sizeof *d);
    import_piece p = {.unpermute_hd = permute_hd};
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < w; c++) d[import_file_row(&p, r) * w + c] = value(k, r, c);
    snprintf(f->names[k], sizeof f->names[k], "%s", name);
    f->data[k] = d;
    f->t[f->n++] = (import_tensor){.name = f->names[k], .dtype = IMPORT_F32, .ndim = cols ? 2 : 1, .rows = rows,
                                   .cols = w, .data = (const unsigned char *)d, .nbytes = (size_t)(rows * w) * 4};
}

static void llama_file(fixture *f) {
    memset(f, 0, sizeof *f);
    add(f, "token_embd.weight", V, C, 0);
    add(f, "output_norm.weight", C, 0, 0);
    for (int l = 0; l < NL; l++) {
        char n[64];
#define ADD(suffix, rows, cols, perm) (snprintf(n, sizeof n, "blk.%d.%s", l, suffix), add(f, n, rows, cols, perm))
        ADD("attn_norm.weight", C, 0, 0);
        ADD("attn_q.weight", NH * HD, C, HD);
        ADD("attn_k.weight", KV * HD, C, HD);
        ADD("attn_v.weight", KV * HD, C, 0);
        ADD("attn_output.weight", C, NH * HD, 0);
        ADD("ffn_norm.weight", C, 0, 0);
        ADD("ffn_gate.weight", F, C, 0);
        ADD("ffn_up.weight", F, C, 0);
        ADD("ffn_down.weight", C, F, 0);
#undef ADD
    }
}

static void free_file(fixture *f) {
    for (size_t i = 0; i < f->n; i++) free(f->data[i]);
}

static int index_of(const fixture *f, const char *name) {
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->names[i], name)) return (int)i;
    ck_abort_msg("no %s", name);
    return -1;
}

START_TEST(llama_pieces_land_in_kiln_layout) {
    fixture f;
    llama_file(&f);
    gpt_config cfg = tiny();
    gpt_names names = gpt_names_for(GPT_NAMES_GGUF, &cfg);
    names.permuted = 1;
    import_source src = {.tensors = f.t, .count = f.n, .path = "tiny.gguf"};
    gpt_model *m = gpt_new(kt_ctx(), &cfg);
    char err[256];
    ck_assert_msg(import_fill(m, &src, gpt_names_recipe, &names, err, sizeof err) == 0, "%s", err);
    /* c_attn [C, (NH + 2 KV) HD]: column j is q's row j, then k's, then v's (HF's order), at input i */
    int q = index_of(&f, "blk.1.attn_q.weight"), k = index_of(&f, "blk.1.attn_k.weight");
    int v = index_of(&f, "blk.1.attn_v.weight"), gate = index_of(&f, "blk.1.ffn_gate.weight");
    int up = index_of(&f, "blk.1.ffn_up.weight"), embd = index_of(&f, "token_embd.weight");
    float got[C * 2 * F];
    ck_assert_int_eq(kiln_download_f32(gpt_find_param(m, "h.1.attn.c_attn.weight")->t, got, C * (NH + 2 * KV) * HD), KILN_OK);
    for (int i = 0; i < C; i++)
        for (int j = 0; j < (NH + 2 * KV) * HD; j++) {
            int piece = j < NH * HD ? q : j < (NH + KV) * HD ? k : v;
            int row = j < NH * HD ? j : j < (NH + KV) * HD ? j - NH * HD : j - (NH + KV) * HD;
            ck_assert_float_eq(got[i * (NH + 2 * KV) * HD + j], value(piece, row, i));
        }
    ck_assert_int_eq(kiln_download_f32(gpt_find_param(m, "h.1.mlp.c_fc.weight")->t, got, C * 2 * F), KILN_OK);
    for (int i = 0; i < C; i++)
        for (int j = 0; j < 2 * F; j++) ck_assert_float_eq(got[i * 2 * F + j], value(j < F ? gate : up, j % F, i));
    ck_assert_int_eq(kiln_download_f32(gpt_find_param(m, "wte.weight")->t, got, V * C), KILN_OK);
    for (int r = 0; r < V; r++)
        for (int c = 0; c < C; c++) ck_assert_float_eq(got[r * C + c], value(embd, r, c));
    gpt_free(m);
    free_file(&f);
}
END_TEST

/* A model read from llama_file with layer 0's q and k in Q8_0 and v in v_format (the file's
 * rows, permuted for q and k, quantized as they lie; blocks[p] holds piece p's). */
static gpt_model *quantized_qkv_model(fixture *f, kiln_qformat v_format, unsigned char **blocks) {
    llama_file(f);
    gpt_config cfg = tiny();
    const char *qkv[3] = {"blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight"};
    for (int p = 0; p < 3; p++) {
        import_tensor *t = &f->t[index_of(f, qkv[p])];
        kiln_qformat format = p == 2 ? v_format : KILN_Q8_0;
        size_t rb = kiln_qformat_row_bytes(format, C);
        blocks[p] = malloc((size_t)t->rows * rb);
        for (int64_t r = 0; r < t->rows; r++)
            kiln_quantize_row(format, (const float *)(const void *)t->data + r * C, C, blocks[p] + r * rb);
        t->dtype = IMPORT_QUANT, t->qformat = format, t->data = blocks[p], t->nbytes = (size_t)t->rows * rb;
    }
    gpt_names names = gpt_names_for(GPT_NAMES_GGUF, &cfg);
    names.permuted = 1;
    import_source src = {.tensors = f->t, .count = f->n, .path = "tiny.gguf"};
    int n = gpt_param_specs(&cfg, NULL);
    param_spec *specs = calloc((size_t)n, sizeof *specs);
    unsigned char *absent = calloc((size_t)n, 1);
    gpt_param_specs(&cfg, specs);
    for (int i = 0; i < n; i++) absent[i] = (unsigned char)import_stays_quantized(&src, &specs[i], gpt_names_recipe, &names);
    gpt_model *m = gpt_new_except(kt_ctx(), &cfg, absent);
    ck_assert_ptr_nonnull(m);
    m->quant = calloc(1, sizeof *m->quant);
    char err[256];
    ck_assert_msg(import_fill(m, &src, gpt_names_recipe, &names, err, sizeof err) == 0, "%s", err);
    free(specs);
    free(absent);
    return m;
}

/* q, k and v in blocks: c_attn stays in blocks without an f32 tensor, its rows the pieces' in
 * HF's order; one matrix when they share Q8_0, two parts (q and k, then v) when v is Q5_0 (as
 * a Q4_K_M file's attn_v in Q6_K beside Q4_K attn_q and attn_k). */
START_TEST(quantized_qkv_kept_in_hf_order) {
    const int mixed = _i;
    const kiln_qformat format[3] = {KILN_Q8_0, KILN_Q8_0, mixed ? KILN_Q5_0 : KILN_Q8_0};
    fixture f;
    unsigned char *blocks[3];
    gpt_model *m = quantized_qkv_model(&f, format[2], blocks);
    ck_assert_ptr_null(gpt_find_param(m, "h.0.attn.c_attn.weight")->t);
    ck_assert_ptr_nonnull(gpt_find_param(m, "h.1.attn.c_attn.weight")->t); /* layer 1's stayed f32 */
    const block_weights *w = &m->blocks[0];
    const kiln_qmatrix *part[2] = {mixed ? w->qpart[BLOCK_QKV_W][0] : w->q[BLOCK_QKV_W], w->qpart[BLOCK_QKV_W][1]};
    ck_assert_ptr_nonnull(part[0]);
    ck_assert_ptr_null(w->qpart[BLOCK_QKV_W][mixed ? 2 : 0]);
    ck_assert_int_eq(kiln_qmatrix_rows(part[0]), (mixed ? NH + KV : NH + 2 * KV) * HD);
    if (mixed) {
        ck_assert_ptr_null(w->q[BLOCK_QKV_W]);
        ck_assert_int_eq(kiln_qmatrix_format(part[0]), KILN_Q8_0);
        ck_assert_int_eq(kiln_qmatrix_format(part[1]), KILN_Q5_0);
        ck_assert_int_eq(kiln_qmatrix_rows(part[1]), KV * HD);
        /* decoding reads each part's blocks where the uniform file's model reads its one matrix */
        fixture g;
        unsigned char *g_blocks[3];
        gpt_model *uniform = quantized_qkv_model(&g, KILN_Q8_0, g_blocks);
        double parts = (double)(kiln_qmatrix_bytes(part[0]) + kiln_qmatrix_bytes(part[1]));
        double one = (double)kiln_qmatrix_bytes(uniform->blocks[0].q[BLOCK_QKV_W]);
        ck_assert_double_eq(gpt_weight_bytes_per_token(m) - gpt_weight_bytes_per_token(uniform), parts - one);
        ck_assert_double_lt(parts, one);
        gpt_free(uniform);
        for (int p = 0; p < 3; p++) free(g_blocks[p]);
        free_file(&g);
    }
    /* the product with unit vectors reads each row back: row j of c_attn is HF's row j */
    int64_t shape[3] = {1, 1, C};
    kiln_tensor *x = kiln_tensor_new(kt_ctx(), KILN_F32, 3, shape);
    float one[C] = {0}, out[(NH + 2 * KV) * HD], row[C];
    one[3] = 1;
    ck_assert_int_eq(kiln_upload_f32(x, one, C), KILN_OK);
    for (int k = 0, at = 0; k < 1 + mixed; at += (int)kiln_qmatrix_rows(part[k++]))
        ck_assert_int_eq(kiln_download_f32(kiln_matmul_q(x, part[k], NULL), out + at, kiln_qmatrix_rows(part[k])), KILN_OK);
    import_piece perm = {.unpermute_hd = HD};
    for (int j = 0; j < (NH + 2 * KV) * HD; j++) {
        int p = j < NH * HD ? 0 : j < (NH + KV) * HD ? 1 : 2, r = p == 0 ? j : p == 1 ? j - NH * HD : j - (NH + KV) * HD;
        int64_t file_row = p < 2 ? import_file_row(&perm, r) : r;
        kiln_dequantize_row(format[p], blocks[p] + file_row * kiln_qformat_row_bytes(format[p], C), C, row);
        ck_assert_float_eq_tol(out[j], row[3], 1e-5); /* a one-hot x: the blocks' rounding keeps it */
    }
    kiln_step_reset(kt_ctx());
    kiln_tensor_free(x);
    gpt_free(m);
    for (int p = 0; p < 3; p++) free(blocks[p]);
    free_file(&f);
}
END_TEST

static void expect_refused(fixture *f, const char *says) {
    gpt_config cfg = tiny();
    gpt_names names = gpt_names_for(GPT_NAMES_GGUF, &cfg);
    names.permuted = 1;
    import_source src = {.tensors = f->t, .count = f->n, .path = "tiny.gguf"};
    int n = gpt_param_specs(&cfg, NULL);
    param_spec *specs = calloc((size_t)n, sizeof *specs);
    gpt_param_specs(&cfg, specs);
    char err[512] = "";
    ck_assert_int_eq(import_check(&src, specs, n, gpt_names_recipe, &names, "tiny", err, sizeof err), -1);
    ck_assert_msg(strstr(err, "tiny.gguf: ") == err && strstr(err, says) && !strchr(err, '\n'), "%s", err);
    free(specs);
}

START_TEST(bad_pieces_refused) {
    fixture f;
    llama_file(&f);
    f.t[index_of(&f, "blk.1.ffn_up.weight")].name = "blk.1.ffn_upp.weight";
    expect_refused(&f, "no tensor blk.1.ffn_up.weight (kiln's h.1.mlp.c_fc.weight)");
    free_file(&f);
    llama_file(&f);
    f.t[index_of(&f, "blk.0.attn_k.weight")].rows = KV * HD - 2;
    expect_refused(&f, "blk.0.attn_k.weight is [14, 32] where kiln's h.0.attn.c_attn.weight needs [16, 32]");
    free_file(&f);
    llama_file(&f);
    f.t[index_of(&f, "blk.0.attn_norm.weight")].dtype = IMPORT_QUANT; /* of qformat KILN_Q8_0 */
    expect_refused(&f, "blk.0.attn_norm.weight is q8_0; kiln reads 1-D tensors as f32, f16 or bf16");
    free_file(&f);
    llama_file(&f);
    f.t[index_of(&f, "output_norm.weight")].ndim = 2;
    expect_refused(&f, "output_norm.weight is 2-D [32, ...] where kiln's ln_f.weight needs [32]");
    free_file(&f);
}
END_TEST

/* ---- Hugging Face folders ---- */

static void write_tensor_file(const char *path, const char *name) {
    char header[256];
    int n = snprintf(header, sizeof header, "{\"%s\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}", name);
    while (n % 8) header[n++] = ' ';
    unsigned char buf[512];
    uint64_t len = (uint64_t)n;
    memcpy(buf, &len, 8);
    memcpy(buf + 8, header, (size_t)n);
    memset(buf + 8 + n, 0, 8);
    kt_write_file(path, buf, 16 + (size_t)n);
}

static void expect_folder_refused(const char *dir, const char *says) {
    gpt_model *m;
    char err[512] = "";
    ck_assert_int_eq(gpt_load_hf(kt_ctx(), dir, KILN_F32, &m, NULL, err, sizeof err), -1);
    ck_assert_msg(strstr(err, says) && !strchr(err, '\n'), "%s", err);
}

START_TEST(bad_folders_refused) {
    char dir[] = "/tmp/kiln_hf_bad_XXXXXX", path[256];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    const char config[] = "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 32, \"num_hidden_layers\": 2, "
                          "\"num_attention_heads\": 2, \"intermediate_size\": 64, \"vocab_size\": 40}";
    snprintf(path, sizeof path, "%s/config.json", dir);
    kt_write_file(path, config, sizeof config - 1);
    snprintf(path, sizeof path, "%s/a.safetensors", dir);
    write_tensor_file(path, "model.norm.weight");
    snprintf(path, sizeof path, "%s/b.safetensors", dir);
    write_tensor_file(path, "model.norm.weight");
    const char twice[] = "{\"weight_map\": {\"x\": \"a.safetensors\", \"y\": \"b.safetensors\"}}";
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    kt_write_file(path, twice, sizeof twice - 1);
    expect_folder_refused(dir, "b.safetensors: tensor model.norm.weight is in two shards");
    const char outside[] = "{\"weight_map\": {\"x\": \"../a.safetensors\"}}";
    kt_write_file(path, outside, sizeof outside - 1);
    expect_folder_refused(dir, "weight_map's x is not a file of the folder");
    const char missing[] = "{\"weight_map\": {\"x\": \"c.safetensors\"}}";
    kt_write_file(path, missing, sizeof missing - 1);
    expect_folder_refused(dir, "c.safetensors");
    kt_remove_tree(dir);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, file_row_is_llama_permute);
    tcase_add_test(tc, llama_pieces_land_in_kiln_layout);
    tcase_add_loop_test(tc, quantized_qkv_kept_in_hf_order, 0, 2);
    tcase_add_test(tc, bad_pieces_refused);
    tcase_add_test(tc, bad_folders_refused);
}

int main(int argc, char **argv) { return kt_main(argc, argv, "host_gpt_import", add_tests, NULL, 0); }
