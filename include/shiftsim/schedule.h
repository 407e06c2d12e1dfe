/*
 * Pipeline schedules: the order in which each pipeline stage runs the forward and backward passes
 * ("phases") of the microbatches of one training iteration.
 *
 * A schedule is built for p stages, v model chunks per stage (virtual stages; v > 1 only for the
 * interleaved schedule) and m microbatches.  Chunk c of stage s is virtual stage c*p + s, so a
 * microbatch's forward visits stages 0..p-1 of chunk 0, then 0..p-1 of chunk 1, and so on; its
 * backward visits them in reverse.  Every stage's list holds each (microbatch, chunk) forward
 * exactly once and its backward exactly once, the backward after the forward; across stages the
 * lists agree on the order in which any two stages exchange activations and gradients, so a
 * lowering that issues one send per producing phase and one receive per consuming phase, in list
 * order, matches them up without deadlock.
 *
 * The XLA lock-step schedule (GSPMD-style pipelining) is different in kind: every stage runs
 * m + p - 1 forward iterations and then m + p - 1 backward iterations, and each iteration ends in
 * one collective-permute across all stages.  A stage with no microbatch in an iteration has a
 * bubble slot there (micro == SSIM_NONE): it computes nothing useful but still takes part in the
 * permute.  All stages therefore have the same number of slots, 2 (m + p - 1).
 *
 * Alpa's MPMD schedules (`alpa`, `alpa-gpipe`) have the phase lists of 1F1B and GPipe, but each
 * phase is a *program* (graph.h): the lowering groups a stage's work of one phase into the
 * program `fwd.MB` or `bwd.MB`, and its optimizer into `apply_grad`, and keeps the transfers
 * between stages outside the programs (ssim_schedule_has_programs).
 *
 * Each schedule is one file (src/workload/schedule-<name>.c) plus one line in SSIM_SCHEDULE_LIST,
 * which yields the enum, the name table and the builder table.
 *
 * Ownership: ssim_schedule_new() returns a schedule the caller frees with ssim_schedule_free()
 * (g_autoptr(SsimSchedule) works); ssim_schedule_phases() returns borrowed storage.
 */
#pragma once

#include <shiftsim/types.h>

G_BEGIN_DECLS

/* X(enum suffix, registry name, builder suffix, one-line summary) */
#define SSIM_SCHEDULE_LIST(X)                                                                      \
    X(GPIPE, "gpipe", gpipe, "all forwards, then all backwards (Huang et al. 2019)")               \
    X(XLA, "xla", xla,                                                                             \
      "lock-step: every stage computes, then one collective-permute; m+p-1 iterations each way")   \
    X(1F1B, "1f1b", 1f1b, "one forward, one backward after a p-s-1 warm-up (PipeDream-flush)")     \
    X(INTERLEAVED, "interleaved", interleaved,                                                     \
      "1F1B over v model chunks per GPU (Narayanan et al. 2021); needs m % p == 0")                \
    X(ALPA, "alpa", alpa,                                                                          \
      "Alpa's MPMD 1F1B: one program per stage and microbatch phase, then apply_grad")             \
    X(ALPA_GPIPE, "alpa-gpipe", alpa_gpipe,                                                        \
      "Alpa's MPMD GPipe: all forward programs, then all backward programs, then apply_grad")

typedef enum {
#define SSIM_X(e, s, f, d) SSIM_SCHEDULE_##e,
    SSIM_SCHEDULE_LIST(SSIM_X)
#undef SSIM_X
        SSIM_SCHEDULE_N
} SsimScheduleKind;

const char *ssim_schedule_kind_name(SsimScheduleKind kind);
const char *ssim_schedule_kind_summary(SsimScheduleKind kind);
/* FALSE (and *out untouched) for an unknown name. */
gboolean ssim_schedule_kind_from_name(const char *name, SsimScheduleKind *out);
/* "gpipe, xla, 1f1b, interleaved"; caller frees. */
char *ssim_schedule_kind_list(void);

typedef enum { SSIM_PHASE_FWD, SSIM_PHASE_BWD } SsimPhaseDir;

/* One slot of a stage's list. */
typedef struct {
    guint8 dir;    /* SsimPhaseDir */
    guint8 last;   /* TRUE on the backward of the chunk's last microbatch on this stage:
                      after it the chunk's gradients are complete */
    guint16 chunk; /* model chunk on this stage, 0..v-1 */
    guint32 micro; /* microbatch 0..m-1; SSIM_NONE for a lock-step bubble slot */
    guint32 iter;  /* lock-step iteration 0..2(m+p-1)-1 (XLA); the slot's ordinal otherwise */
} SsimPhase;

typedef struct SsimSchedule SsimSchedule;

/*
 * Builds `kind` for `pp` stages, `v` chunks per stage and `m` microbatches.  Fails with
 * SSIM_CONFIG_ERROR_VALUE naming the rule when the combination is impossible: pp, v, m >= 1;
 * v == 1 except for interleaved; interleaved needs pp > 1 and m % pp == 0.
 */
SsimSchedule *ssim_schedule_new(SsimScheduleKind kind, guint pp, guint v, guint m, GError **error);
void ssim_schedule_free(SsimSchedule *schedule);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SsimSchedule, ssim_schedule_free)

SsimScheduleKind ssim_schedule_kind(const SsimSchedule *schedule);
guint ssim_schedule_pp(const SsimSchedule *schedule);
guint ssim_schedule_v(const SsimSchedule *schedule);
guint ssim_schedule_m(const SsimSchedule *schedule);
/* TRUE for schedules whose iterations end in a collective-permute (XLA). */
gboolean ssim_schedule_is_lockstep(const SsimSchedule *schedule);
/* TRUE for schedules whose phases are programs (Alpa's MPMD: alpa, alpa-gpipe). */
gboolean ssim_schedule_has_programs(const SsimSchedule *schedule);
gboolean ssim_schedule_kind_has_programs(SsimScheduleKind kind);

/* The phases of `stage` in execution order (borrowed). */
const SsimPhase *ssim_schedule_phases(const SsimSchedule *schedule, guint stage, guint *n);

/* The virtual stage (position in the model, 0..p*v-1) of `chunk` on `stage`: chunk*p + stage. */
guint ssim_schedule_virtual_stage(const SsimSchedule *schedule, guint stage, guint chunk);

/*
 * The largest number of (microbatch, chunk) forward passes whose backward has not run yet, over
 * the stage's list: what it must keep activations for at its peak (the `in_flight` argument of
 * ssim_memory_estimate).  GPipe, alpa-gpipe and XLA m, 1F1B and alpa min(p - s, m), interleaved
 * on stage 0 min(v p + p - 1, v m).
 */
guint ssim_schedule_in_flight(const SsimSchedule *schedule, guint stage);

G_END_DECLS
