/* Beam search's bookkeeping (host/model/seq2seq/seq2seq_beam.h) on hand-built models: each
 * case's next-token probabilities depend on the hypothesis' prefix only, so the right answer
 * is worked out by hand from Hugging Face's and fairseq's semantics:
 *   - a wider beam finds the more probable output that greedy's first choice walks past;
 *   - an EOS that ranks below the beam's width is dropped, not finished;
 *   - the length penalty is GNMT's ((5 + |Y|) / 6)^alpha with |Y| counting the EOS;
 *   - the search is not over while a live hypothesis can still beat the finished ones after
 *     normalization (stopping once `beam` hypotheses are finished returns short outputs);
 *   - the length limit finishes the live hypotheses without an EOS. */
#include <math.h>
#include <string.h>

#include "model/seq2seq/seq2seq_beam.h"
#include "testutil.h"

enum { EOS, A, B, C, V };

/* A model: fills p[V] (probabilities) for the prefix tokens[0..len). */
typedef void (*toy_model)(const int32_t *tokens, int len, double *p);

/* Runs the search to its end; returns the best output's length, its tokens in out. */
static int run_search(toy_model model, int beam, float alpha, int max_len, int32_t *out, double *score) {
    seq2seq_beam b;
    ck_assert_int_eq(seq2seq_beam_init(&b, beam, V, max_len, alpha, EOS), 0);
    float logprobs[SEQ2SEQ_BEAM_MAX * V];
    for (int pos = 0; pos < max_len && b.alive > 0; pos++) {
        for (int h = 0; h < b.alive; h++) {
            double p[V];
            model(b.tokens + h * max_len, pos, p);
            for (int v = 0; v < V; v++) logprobs[h * V + v] = (float)log(p[v]);
        }
        seq2seq_beam_step(&b, logprobs, pos);
    }
    seq2seq_beam_end(&b);
    int n = b.best_len;
    memcpy(out, b.best, (size_t)n * sizeof *out);
    if (score) *score = b.best_score;
    seq2seq_beam_free(&b);
    return n;
}

static void set(double *p, double eos, double a, double b, double c) {
    p[EOS] = eos;
    p[A] = a;
    p[B] = b;
    p[C] = c;
}

/* "a" first (0.5) but then nothing sure (P("a a") = 0.5 * 0.4 * 0.9 = 0.18); "b" (0.4) leads
 * to "b c" (0.4 * 0.95 * 0.99 = 0.376). */
static void garden_path(const int32_t *t, int len, double *p) {
    if (len == 0) set(p, 0.05, 0.5, 0.4, 0.05);
    else if (len == 1 && t[0] == A) set(p, 0.01, 0.4, 0.3, 0.29);
    else if (len == 1) set(p, 0.01, 0.02, 0.02, 0.95);
    else if (len == 2 && t[0] == B) set(p, 0.99, 0.004, 0.003, 0.003);
    else set(p, 0.9, 0.04, 0.03, 0.03);
}

START_TEST(a_wider_beam_finds_the_more_probable_output) {
    int32_t out[8];
    double score;
    ck_assert_int_eq(run_search(garden_path, 1, 0.0f, 8, out, &score), 2); /* greedy */
    ck_assert_int_eq(out[0], A);
    ck_assert_int_eq(out[1], A);
    ck_assert_double_eq_tol(score, log(0.5 * 0.4 * 0.9), 1e-6);
    ck_assert_int_eq(run_search(garden_path, 2, 0.0f, 8, out, &score), 2);
    ck_assert_int_eq(out[0], B);
    ck_assert_int_eq(out[1], C);
    ck_assert_double_eq_tol(score, log(0.4 * 0.95 * 0.99), 1e-6);
}
END_TEST

/* The empty output has P 0.4, but its EOS ranks second: with a beam of one it is dropped and
 * "a b" (0.6 * 0.5) is the answer, as in Hugging Face's search. */
static void eos_second(const int32_t *t, int len, double *p) {
    (void)t;
    if (len == 0) set(p, 0.4, 0.6, 0.0, 0.0);
    else if (len == 1) set(p, 1e-6, 0.0, 0.5, 0.5 - 1e-6);
    else set(p, 1.0, 0.0, 0.0, 0.0);
}

START_TEST(an_eos_below_the_beam_is_dropped) {
    int32_t out[8];
    ck_assert_int_eq(run_search(eos_second, 1, 0.0f, 8, out, NULL), 2);
    ck_assert_int_eq(out[0], A);
    ck_assert_int_eq(out[1], B);
    /* with a beam of two it ranks among the best and wins */
    ck_assert_int_eq(run_search(eos_second, 2, 0.0f, 8, out, NULL), 0);
}
END_TEST

/* "a b" then EOS, surely but not certainly. */
static void two_tokens(const int32_t *t, int len, double *p) {
    (void)t;
    if (len == 0) set(p, 0.01, 0.9, 0.05, 0.04);
    else if (len == 1) set(p, 0.02, 0.03, 0.8, 0.15);
    else set(p, 0.7, 0.1, 0.1, 0.1);
}

START_TEST(the_length_penalty_counts_the_eos) {
    int32_t out[8];
    double score;
    ck_assert_int_eq(run_search(two_tokens, 1, 1.0f, 8, out, &score), 2);
    ck_assert_double_eq_tol(score, log(0.9 * 0.8 * 0.7) / ((5.0 + 3.0) / 6.0), 1e-6);
    ck_assert_double_eq_tol(seq2seq_length_penalty(0.6f, 3), pow(8.0 / 6.0, (double)0.6f), 1e-12);
}
END_TEST

/* The empty output ranks first (EOS 0.55), but "a b" (0.45 * 0.99 * 0.99) scores higher
 * once normalized with alpha 2: log 0.55 / 1 = -0.598 against -0.819 / (8/6)^2 = -0.460. A
 * search that stopped as soon as `beam` hypotheses were finished would return nothing. */
static void short_first(const int32_t *t, int len, double *p) {
    (void)t;
    if (len == 0) set(p, 0.55, 0.45, 0.0, 0.0);
    else if (len == 1) set(p, 0.0, 0.0, 0.99, 0.01);
    else set(p, 0.99, 0.0, 0.0, 0.01);
}

START_TEST(the_search_goes_on_while_a_live_hypothesis_can_win) {
    int32_t out[8];
    double score;
    ck_assert_int_eq(run_search(short_first, 1, 2.0f, 4, out, &score), 2);
    ck_assert_int_eq(out[0], A);
    ck_assert_int_eq(out[1], B);
    ck_assert_double_eq_tol(score, log(0.45 * 0.99 * 0.99) / pow(8.0 / 6.0, 2.0), 1e-6);
    /* without the length penalty the empty output is the best there is */
    ck_assert_int_eq(run_search(short_first, 1, 0.0f, 4, out, NULL), 0);
}
END_TEST

/* Never an EOS: the length limit ends the search, and the output has no EOS to count. */
static void no_end(const int32_t *t, int len, double *p) {
    (void)t;
    (void)len;
    set(p, 0.0, 0.1, 0.2, 0.7);
}

START_TEST(the_length_limit_finishes_without_an_eos) {
    int32_t out[8];
    double score;
    ck_assert_int_eq(run_search(no_end, 3, 1.0f, 3, out, &score), 3);
    for (int i = 0; i < 3; i++) ck_assert_int_eq(out[i], C);
    ck_assert_double_eq_tol(score, 3.0 * log(0.7) / ((5.0 + 3.0) / 6.0), 1e-6);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, a_wider_beam_finds_the_more_probable_output);
    tcase_add_test(tc, an_eos_below_the_beam_is_dropped);
    tcase_add_test(tc, the_length_penalty_counts_the_eos);
    tcase_add_test(tc, the_search_goes_on_while_a_live_hypothesis_can_win);
    tcase_add_test(tc, the_length_limit_finishes_without_an_eos);
}

int main(void) { return kt_run_tcase("host_seq2seq_beam", "beam", 0, add_tests); }
