/* actions: the body of each phase, one function per phase.
 *
 * Grouped by what they touch: act_run.c (the run itself: start,
 * checkpoints, cleanup, report), act_band.c (the probes), act_sandbox.c
 * (preflight, sandbox, launch, daemon restart, teardown). Each runs inside
 * a CUnit test case with the run state loaded and locked (see phases.h).
 */
#ifndef SMOKE_ACTIONS_H
#define SMOKE_ACTIONS_H

#include "phases.h"

void act_start(phase_env *env);
void act_preflight(phase_env *env);
void act_sandbox(phase_env *env);
void act_launch(phase_env *env);
void act_probe(phase_env *env); /* initial, after-wifi-reconnect, after-sleep-wake */
void act_wifi_checkpoint(phase_env *env);
void act_sleep_checkpoint(phase_env *env);
void act_daemon_restart(phase_env *env);
void act_cleanup(phase_env *env);
void act_report(phase_env *env);
void act_teardown(phase_env *env);

/* One probe of the run's agent for env->def->probe_label, after the
 * prerequisites are re-checked, recorded as that label's latest attempt
 * whatever happened (*out says what). Returns 0 only when the attempt could
 * not be recorded (a failed check is reported then); read out->passed for
 * the verdict. act_probe and the daemon restart both probe through it. */
struct probe_outcome;
int act_probe_attempt(phase_env *env, struct probe_outcome *out);

/* Observations the suite drafts from what it measured start with this, so
 * a reader tells them from the operator's own words. */
#define ACT_DRAFT_PREFIX "(drafted by band-smoke) "

/* The scope statement the start phase reads out (from the seed workflow). */
extern const char act_scope[];

#endif
