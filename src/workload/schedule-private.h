/*
 * The inside of SsimSchedule, shared by schedule.c and the one-file-per-schedule builders
 * (schedule-<name>.c).  A builder appends each stage's phases with sched_push(); schedule.c then
 * numbers the slots, marks each chunk's last backward and checks the invariants stated in
 * include/shiftsim/schedule.h, so a builder cannot hand back a list that loses a phase.
 */
#pragma once

#include <shiftsim/schedule.h>

struct SsimSchedule {
    SsimScheduleKind kind;
    guint pp, v, m;
    GArray **stages; /* pp arrays of SsimPhase */
};

/* Appends a phase to `stage`'s list; `iter` matters only to lock-step schedules. */
void sched_push(SsimSchedule *schedule, guint stage, SsimPhaseDir dir, guint chunk, guint32 micro,
                guint32 iter);

/* One builder per schedule, named by the third column of SSIM_SCHEDULE_LIST. */
#define SSIM_X(e, s, f, d) gboolean ssim_schedule_build_##f(SsimSchedule *schedule, GError **error);
SSIM_SCHEDULE_LIST(SSIM_X)
#undef SSIM_X
