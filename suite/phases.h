/* phases: the thirteen staging phases, as one table.
 *
 * Each phase is a CUnit test case run by `band-smoke phase NAME` and a ctest
 * test `phase.NN.name`. This table is the one place that names them, says
 * what each one does when it runs (its action), and holds every message the
 * operator sees about it. What must be true before a phase may run lives in
 * gates.c, in a table of the same shape.
 *
 * Actions run inside a CUnit test case: they report failures with
 * phase_check() and may leave a one-line summary for the record with
 * phase_note(). They load nothing themselves: the engine hands them the
 * locked context with the run state loaded, and saves and reports after.
 */
#ifndef SMOKE_PHASES_H
#define SMOKE_PHASES_H

#include <stddef.h>

#include "ctx.h"

typedef enum phase_id {
    PH_START,
    PH_PREFLIGHT,
    PH_SANDBOX,
    PH_LAUNCH,
    PH_INITIAL,
    PH_WIFI_CHECKPOINT,
    PH_AFTER_WIFI,
    PH_SLEEP_CHECKPOINT,
    PH_AFTER_SLEEP,
    PH_DAEMON_RESTART,
    PH_CLEANUP,
    PH_REPORT,
    PH_TEARDOWN,
    PH__COUNT
} phase_id;

typedef struct phase_env {
    smoke_ctx *ctx;
    const struct phase_def *def;
    int again;      /* --again: run even though it already passed */
    char note[512]; /* one-line summary recorded when the phase passes */
} phase_env;

typedef void (*phase_action)(phase_env *env);

typedef struct phase_def {
    phase_id id;
    const char *name;        /* short name: "initial" */
    const char *ctest_name;  /* "phase.05.initial" */
    const char *title;       /* "Initial probe" */
    const char *probe_label; /* probe this phase records, NULL if none */
    int checkpoint;          /* ends the operator's step when it passes */
    phase_action action;
    const char *on_pass;     /* shown after a pass; NULL = nothing more */
} phase_def;

/* The table, in run order; PH__COUNT entries. */
const phase_def *phase_all(void);
const phase_def *phase_get(phase_id id);

/* By short name ("initial") or ctest name ("phase.05.initial"); NULL if
 * neither. */
const phase_def *phase_find(const char *name);

/* The exact command that runs one phase alone, for operators and AI
 * clients: ctest --test-dir BUILD -R '^phase\.05\.initial$' --output-on-failure */
void phase_command(const phase_def *def, char *buf, size_t cap);

/* A band-smoke command line as the operator types it from the project
 * root: phase_smoke_command("record-phase failed", ...) gives
 * build/band-smoke record-phase failed. For what ctest cannot pass on
 * (--again) and the commands that are not phases. */
void phase_smoke_command(const char *args, char *buf, size_t cap);

/* Reports a failed check inside an action (CUnit assertion with a runtime
 * message). Returns ok so actions can write `if (!phase_check(...)) return;` */
#define phase_check(env, ok, ...) \
    phase_check_at((env), (ok) ? 1 : 0, __FILE__, __LINE__, __VA_ARGS__)
int phase_check_at(phase_env *env, int ok, const char *file, int line,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Sets the one-line summary recorded when the phase passes. */
void phase_note(phase_env *env, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Operator-facing line on stdout, redacted. */
void phase_say(phase_env *env, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
