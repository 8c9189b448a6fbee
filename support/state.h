/* state: the run state, `.sandbox-smoke/state.json`.
 *
 * One run of the smoke is one state_t. Every phase, command and report
 * reads it; phases write it. It holds ids, names, timestamps and results,
 * never a credential (state_save also passes the text through redact).
 *
 * Rules (design section 4), all enforced here:
 * - Atomic save: a temp file in the same folder, fsync, rename, mode 0600;
 *   the folder is created 0700.
 * - A state.json that is empty, truncated, not JSON, of the wrong shape or
 *   of an unknown schema_version is ERR_CORRUPT with a message naming the
 *   file and the problem, and is never overwritten or replaced by any
 *   function here (state_save refuses to replace a file it could not read).
 * - A run that is terminal (completed, failed) or idle for more than
 *   STATE_STALE_MS is never continued: state_rotate archives it as
 *   `state.<run_id>.json` and starts a fresh run carrying over the
 *   room/agent ids it never reaped.
 * - Files in the folder are opened with O_NOFOLLOW|O_NONBLOCK and used only
 *   when regular: a symlink, FIFO or device state.json is ERR_CORRUPT
 *   (never read, never replaced, no blocking while the lock is held), and
 *   a symlinked `.lock` is refused without creating anything.
 * - Text enters the state as valid UTF-8 (invalid sequences become
 *   U+FFFD, after redaction), so state.json reads in any strict reader.
 * - begin_provision reuses the current run only when it has no probes yet
 *   or its phase is daemon-restart; otherwise it rotates.
 * - The verdict comes from the probes alone (latest attempt per label) plus
 *   an explicit `failed` phase.
 *
 * Ownership: state_t objects are heap-allocated by this module and freed
 * with state_free(). Strings inside are fixed arrays owned by the struct.
 * Time comes from the store's clock_src, so tests can age a run.
 * Phase names in `phases[]` are opaque keys to this module: it knows run
 * phases (started, awaiting-...), not the suite's test cases.
 */
#ifndef SMOKE_STATE_H
#define SMOKE_STATE_H

#include <stdint.h>

#include "clock.h"
#include "err.h"

#define STATE_SCHEMA_VERSION 1
#define STATE_STALE_MS (12LL * 3600 * 1000)
#define STATE_PATH_SZ 1024
#define STATE_ID_SZ 64
#define STATE_NAME_SZ 128
#define STATE_TEXT_SZ 512
#define STATE_OUTPUT_SZ 4096 /* a phase's own operator lines, the last of them */
#define STATE_MAX_PROBES 64
#define STATE_MAX_PHASES 16

/* The probe labels whose latest attempts decide the verdict, in order. */
#define STATE_MANDATORY_PROBES 4
extern const char *const state_mandatory_probes[STATE_MANDATORY_PROBES];

typedef enum run_phase {
    RUN_STARTED,
    RUN_AWAITING_WIFI,  /* "awaiting-wifi-recovery" */
    RUN_AWAITING_SLEEP, /* "awaiting-sleep-wake" */
    RUN_DAEMON_RESTART, /* "daemon-restart" */
    RUN_COMPLETED,
    RUN_FAILED,
    RUN__COUNT
} run_phase;

const char *state_run_phase_name(run_phase p); /* "unknown" out of range */
err_code state_run_phase_parse(const char *name, run_phase *out); /* ERR_USAGE */

typedef enum state_result {
    RESULT_NONE = 0, /* never run in this run */
    RESULT_PASSED,
    RESULT_FAILED,
    RESULT_SKIPPED /* gated; detail says what is missing */
} state_result;

const char *state_result_name(state_result r); /* "passed", ... "" for NONE */

typedef struct state_probe {
    char label[32];
    char marker[32]; /* the 12-hex token sent */
    int passed;
    char detail[STATE_TEXT_SZ]; /* redacted reason or summary */
    int64_t at_ms;
    int64_t latency_ms; /* send to verdict; -1 when unknown */
    int generation;     /* agent launch generation probed; 0 unknown */
} state_probe;

typedef struct state_phase_result {
    char name[32]; /* suite's short phase name: an opaque key here */
    state_result status;
    int64_t at_ms;
    int64_t duration_ms;
    char detail[STATE_TEXT_SZ];
    /* The phase's own operator lines of this attempt ("" when none were
     * kept, and in files written before the field existed): redacted,
     * newline-ended, at most the last STATE_OUTPUT_SZ - 1 bytes. */
    char output[STATE_OUTPUT_SZ];
    /* The file in the state folder holding this failure's diagnostics
     * ("diagnostics.<name>.txt"), "" when none was kept. */
    char diagnostics[64];
} state_phase_result;

/* How to tell whether the launched agent still runs: the detached
 * launcher's pid plus its kernel start token (platform.h). */
typedef struct state_agent_process {
    int generation; /* 0 = never launched; +1 on every launch */
    int pid;
    uint64_t start_token;
    int64_t launched_at_ms;
    int64_t ready_at_ms;   /* readiness line seen; 0 = not yet */
    int64_t log_offset;    /* agent.log size when this generation began */
    int64_t ended_at_ms;   /* 0 = not known to have ended */
    char exit_detail[128]; /* "exited with status 137", when known */
} state_agent_process;

/* What the evidence gates measured (design section 5). 0 = not measured. */
typedef struct state_wifi_evidence {
    int64_t disconnect_at_ms;
    int64_t reconnect_at_ms;
    int generation;
    char disconnect_line[STATE_TEXT_SZ]; /* redacted agent.log excerpt */
    char reconnect_line[STATE_TEXT_SZ];
} state_wifi_evidence;

typedef struct state_sleep_evidence {
    clock_reading checkpoint;  /* snapshot at the sleep checkpoint */
    int64_t slept_ms;          /* measured host sleep; -1 unknown */
    int64_t confirmed_at_ms;   /* `confirm sleep-wake`; 0 = not confirmed */
    char method[16];           /* "measured" or "operator" once gated */
    char sandbox_status[32];   /* sbx ls after the wake */
} state_sleep_evidence;

typedef struct state_daemon_evidence {
    int64_t stop_at_ms;
    int64_t start_at_ms;
    char sandbox_status[32];  /* seen in sbx ls after the restart */
    char agent_exit[128];     /* how the old agent ended */
    int64_t ready_at_ms;      /* relaunched agent ready */
    int64_t recovery_ms;      /* daemon stop -> probe passed; 0 unknown */
} state_daemon_evidence;

typedef struct state_evidence {
    state_wifi_evidence wifi;
    state_sleep_evidence sleep;
    state_daemon_evidence daemon_restart;
} state_evidence;

typedef struct state_t {
    int schema_version;
    char run_id[9]; /* 8 lowercase hex */
    run_phase phase;
    char sandbox_name[STATE_NAME_SZ];
    char sandbox_created_by[9]; /* run id that created the sandbox; "" = not ours */
    char workspace[STATE_PATH_SZ];
    char sbx_version[64];
    char sdk_version[64];
    char room_id[STATE_ID_SZ];
    char agent_id[STATE_ID_SZ];
    char agent_name[STATE_NAME_SZ];
    /* The unique title of the room being made, saved before Band is asked
     * (like agent_name): a create whose answer never came is found again
     * by it. Kept with room_id; cleared when the room is reaped. */
    char room_title[STATE_NAME_SZ];
    char carried_from[9]; /* run id whose unreaped ids this run inherited */
    state_probe probes[STATE_MAX_PROBES];
    int nprobes;
    state_phase_result phases[STATE_MAX_PHASES];
    int nphases;
    char residual_sleep_wake[STATE_TEXT_SZ];     /* residual_checks.sleep_wake */
    char residual_daemon_restart[STATE_TEXT_SZ]; /* residual_checks.daemon_restart */
    state_evidence evidence;
    state_agent_process agent_process;
    int64_t started_at_ms;
    int64_t updated_at_ms;
} state_t;

/* Where state lives and which clock stamps it. A plain value; no handles. */
typedef struct state_store {
    char dir[STATE_PATH_SZ];
    char path[STATE_PATH_SZ + 16]; /* dir + "/state.json" */
    clock_src clock;
} state_store;

/* Fills *store for `dir` and creates the folder (0700; parents too).
 * `clk` NULL = clock_system(). ERR_IO if the folder cannot be made;
 * ERR_CONFIG (naming the owner and SMOKE_STATE_DIR) when it belongs to
 * another user: refused before any command touches Band. */
err_code state_store_init(state_store *store, const char *dir,
                          const clock_src *clk, char *err);

/* A fresh run: random run_id, phase started, started_at = now. Caller frees.
 * NULL only when out of memory. */
state_t *state_new(const state_store *store);
void state_free(state_t *st);

/* Reads state.json. ERR_NOTFOUND (message says so) when there is none;
 * ERR_CORRUPT naming the file and the problem when it cannot be used;
 * ERR_IO when it cannot be read. On success *out is the caller's. */
err_code state_load(const state_store *store, state_t **out, char *err);

/* Atomically writes st (updated_at = now) through redact. Refuses with
 * ERR_CORRUPT when the file on disk exists but cannot be parsed (so a
 * damaged file is never silently replaced). */
err_code state_save(const state_store *store, state_t *st, char *err);

/* JSON text <-> state, exposed for tests and the fuzzer. state_parse never
 * reads past len and never crashes on any input; on failure *out is
 * untouched. `what` names the source in messages (a path). state_to_json
 * returns malloc'd text or NULL; it is exact and does not redact
 * (state_save redacts each string before it is written). */
err_code state_parse(const char *json, size_t len, const char *what,
                     state_t *out, char *err);
char *state_to_json(const state_t *st);

/* Run lifecycle. */
int state_is_terminal(const state_t *st);
int state_is_stale(const state_t *st, int64_t now_ms);

/* Archives *st as state.<run_id>.json (atomic, 0600; state.<run_id>-2.json
 * and so on when that name is taken: an archive is never overwritten), then
 * replaces *st with a fresh saved run carrying over unreaped room/agent ids
 * (carried_from set when it carried any). On failure *st is untouched and
 * no archive is left behind. */
err_code state_rotate(const state_store *store, state_t **st, char *err);

/* Loads the run to continue, or makes one: no file -> a fresh saved run;
 * terminal or stale -> rotated. ERR_CORRUPT passes through untouched.
 * *rotated (may be NULL) tells whether an old run was archived. */
err_code state_open_run(const state_store *store, state_t **out, int *rotated,
                        char *err);

/* design 4 begin_provision: rotates *st unless it has no probes yet or its
 * phase is daemon-restart. A rotated run also keeps sandbox_name, sandbox_created_by,
 * workspace, sbx_version and sdk_version (the sandbox outlives runs). */
err_code state_begin_provision(const state_store *store, state_t **st,
                               int *rotated, char *err);

/* Probes. Appends an attempt (ERR_FULL past STATE_MAX_PROBES). */
err_code state_add_probe(state_t *st, const state_probe *probe);
const state_probe *state_latest_probe(const state_t *st, const char *label);
int state_probe_attempts(const state_t *st, const char *label);

/* Phase results: the latest result per phase name replaces the previous,
 * in place. RESULT_NONE removes the entry (state_phase then returns NULL).
 * ERR_USAGE for an empty or over-long name, ERR_FULL past STATE_MAX_PHASES. */
err_code state_set_phase(state_t *st, const char *name, state_result status,
                         int64_t at_ms, int64_t duration_ms,
                         const char *detail);
const state_phase_result *state_phase(const state_t *st, const char *name);

/* Sets the output of the phase entry `name` (state_set_phase clears it, as
 * a new result is a new attempt): redacted, and when too long its last
 * lines that fit, cut at a line start. ERR_NOTFOUND when the phase has no
 * entry; ERR_USAGE for a NULL argument. */
err_code state_set_phase_output(state_t *st, const char *name, const char *text);

/* Names the diagnostics file of the phase entry `name` (cleared, too, by
 * state_set_phase). ERR_NOTFOUND without an entry; ERR_USAGE for a NULL
 * argument or a name that does not fit. */
err_code state_set_phase_diagnostics(state_t *st, const char *name, const char *file);

/* Residual checks: "sleep_wake" or "daemon_restart" only (ERR_USAGE else). */
err_code state_set_residual(state_t *st, const char *check, const char *text);
const char *state_residual(const state_t *st, const char *check);

typedef enum state_verdict {
    VERDICT_INCOMPLETE,
    VERDICT_PASS,
    VERDICT_FAIL
} state_verdict;

/* PASS when every mandatory probe's latest attempt passed and the run is not
 * failed; FAIL when any label's latest attempt failed or the phase is
 * failed (FAIL wins over a missing probe); INCOMPLETE otherwise. */
state_verdict state_verdict_of(const state_t *st);
const char *state_verdict_name(state_verdict v); /* "PASS", "FAIL", ... */

/* Advisory lock on the state folder so two band-smoke processes never
 * interleave a load-modify-save. Waits up to timeout_ms. *fd is passed to
 * state_unlock. ERR_TIMEOUT when another process holds it too long. The
 * lock (fcntl, on `.lock` in the folder) belongs to the process: take it
 * once per process, not once per caller. Taking it also removes the temp
 * files of writers that died mid-save: every writer saves under the lock. */
err_code state_lock(const state_store *store, int timeout_ms, int *fd,
                    char *err);
void state_unlock(int fd);

#endif
