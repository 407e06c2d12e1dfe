/*
 * The classes of the ops of a training step, as every figure, cost explanation and report files
 * them: compute ("fwd", "bwd", "recompute", "optimizer") and communication ("tp", "pp", "dp", and
 * "cp": context parallelism's key-value ring).
 * A graph op carries its class as a label; the lowering sets it, a graph file or a trace may.
 * The communication classes are also reported on their own (exposed time, contention).
 */
#pragma once

#include <shiftsim/types.h>

G_BEGIN_DECLS

/* The op classes, in the order used by per-class figures. */
#define SSIM_OPCLASS_LIST(X)                                                                       \
    X(FWD, "fwd")                                                                                  \
    X(BWD, "bwd")                                                                                  \
    X(RECOMPUTE, "recompute")                                                                      \
    X(OPTIMIZER, "optimizer")                                                                      \
    X(TP, "tp")                                                                                    \
    X(PP, "pp")                                                                                    \
    X(DP, "dp")                                                                                    \
    X(CP, "cp")

typedef enum {
#define SSIM_X(e, s) SSIM_OPCLASS_##e,
    SSIM_OPCLASS_LIST(SSIM_X)
#undef SSIM_X
        SSIM_OPCLASS_N
} SsimOpClass;

const char *ssim_opclass_name(SsimOpClass cls);
/* FALSE for a label that is none of the above. */
gboolean ssim_opclass_from_name(const char *name, SsimOpClass *out);

/* The communication classes reported separately; a "cp" op is reported with "tp" (both are a
 * layer's own communication, inside its forward and backward). */
typedef enum { SSIM_COMM_TP, SSIM_COMM_PP, SSIM_COMM_DP, SSIM_COMM_N } SsimCommClass;
const char *ssim_comm_class_name(SsimCommClass cls); /* "tp", "pp", "dp" */

G_END_DECLS
