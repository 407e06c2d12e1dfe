/*
 * Which shapes shiftsim-bench measures for a model: every forward and backward GEMM of one decoder
 * layer (and the LM head) on one tensor-parallel rank, the attention problems and the
 * memory-bound operations of a layer, for each tensor-parallel degree and microbatch size asked
 * for.  Plain C: it builds and is unit-tested without CUDA.
 *
 * GEMM convention (row-major, as the profile format): the forward GEMM is C[m x n] = A[m x k]
 * B[k x n].  Its backward pass is two GEMMs: the gradient with respect to A, dA[m x k] = dC[m x n]
 * B^T[n x k], labelled `dgrad` (shape m, n=k, k=n), and the gradient with respect to B,
 * dB[k x n] = A^T[k x m] dC[m x n], labelled `wgrad` (shape m=k, n, k=m).  For a weight GEMM
 * these are the input-gradient and the weight-gradient GEMMs; for the attention GEMMs (Q K^T and
 * P V, where both operands are activations) `wgrad` is the gradient of the second operand.
 *
 * Each GEMM carries the operand layout frameworks run it in (SsimBenchGemmShape.layout): a
 * weight is stored [out, in], so a weight GEMM's forward is "NT", its dgrad "NN" and its wgrad
 * "TN"; P V (V stored [s, d]) is "NN" forward and "NT" dgrad; sweep GEMMs are "NT".
 *
 * Invariants of every list returned: no two entries have the same (batch, m, n, k) -- a shape
 * reached by several GEMMs is kept once, in the layout of the first GEMM that reached it, and its
 * label lists each distinct name in order of first appearance, joined by '+' -- and entries are
 * sorted by (batch, m, n, k) ascending, so the same inputs always give the same list.
 *
 * Ownership: each function returns a new GArray the caller frees with g_array_unref().
 */
#pragma once

#include "src/microbench/bench.h"

#include <shiftsim/model.h>

G_BEGIN_DECLS

/*
 * GEMM shapes (SsimBenchGemmShape) of one layer plus the LM head for every tp in `tps` and every
 * microbatch in `microbatches`, for sequences of `seq` tokens (0 = the model's seq_len).
 * Labels read "fwd.qkv", "bwd.qkv.dgrad", "bwd.ffn_up.wgrad", ... (names from ssim_gemm_kind_name).
 */
GArray *ssim_bench_gemm_shapes(const SsimModel *model, const guint *tps, guint n_tps,
                               const guint *microbatches, guint n_microbatches, guint seq);

/* Square GEMMs m = n = k for each size in `sizes` (labelled "sweep"), in the same order rules. */
GArray *ssim_bench_gemm_sweep(const guint64 *sizes, guint n_sizes);

/* Adds every shape of `more` to `list` under the same rules (a shape already there gains the
 * new labels), and sorts `list` again. */
void ssim_bench_gemm_shapes_merge(GArray *list, const GArray *more);

/* Attention problems (SsimBenchAttention): per (tp, microbatch), ceil(heads / tp) heads of the
 * model's head dimension, `seq` tokens, `microbatch` sequences; deduplicated, sorted by
 * (seq, heads, head_dim, batch). */
GArray *ssim_bench_attention_cases(const SsimModel *model, const guint *tps, guint n_tps,
                                   const guint *microbatches, guint n_microbatches, guint seq);

/*
 * Memory-bound cases (SsimBenchMemCase) of one layer per (tp, microbatch), with T = microbatch *
 * seq tokens: layernorm over T rows of `hidden`; gelu over T x ceil(ffn / tp) elements; softmax
 * over microbatch * ceil(heads / tp) * seq rows of seq; residual add over T x hidden; Adam over the
 * layer's parameters / tp (rounded up); copy of T x hidden.  Elementwise ops have rows = 1.
 * Deduplicated and sorted by (op, rows, cols).
 */
GArray *ssim_bench_memory_cases(const SsimModel *model, const guint *tps, guint n_tps,
                                const guint *microbatches, guint n_microbatches, guint seq);

G_END_DECLS
