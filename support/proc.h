/* proc: run other programs by argv, bounded in time and output, with a
 * clean environment. Never through a shell.
 *
 * Three ways to start a program:
 * - proc_run: run to completion under a deadline and capture what it
 *   prints. The child leads its own process group, so a timeout ends the
 *   whole group (the program and anything it spawned), SIGTERM first,
 *   SIGKILL after a grace period, each to the group and to the child by pid
 *   (a child that moved itself out of its group is still ended), and every
 *   wait after the deadline is bounded. A stop signal (sig.h) ends the run
 *   the same way at once, with ERR_INTERRUPTED. A descendant that made a
 *   session of its own (setsid) is out of reach by design; it cannot hold
 *   the run past PROC_DRAIN_MS.
 * - proc_launch_detached: start a program that outlives this process (the
 *   agent launch). Double fork + setsid, so it is nobody's child here and
 *   nobody's terminal job; its output is appended to a log file.
 * - proc_kill_group: end such a launch later, by its pid.
 *
 * Secrets. argv is visible to every user of the machine (ps, /proc), so an
 * argv element must never hold a secret: proc_run and proc_launch_detached
 * refuse with ERR_USAGE any element that redact_has_secret() recognises,
 * and the same for explicit environment additions (a secret travels in a
 * 0600 env file instead: proc_envfile_write). The child's environment is
 * the parent's minus BAND_API_KEY_USER and BAND_API_KEY (always), minus any
 * inherited variable whose value holds a registered secret, minus the
 * caller's scrub list, plus the caller's additions.
 *
 * Not thread-safe with respect to other threads that fork: the pipes made
 * here are marked close-on-exec right after creation, not atomically.
 */
#ifndef SMOKE_PROC_H
#define SMOKE_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

#define PROC_CAPTURE_MAX (1024 * 1024) /* default bound per captured stream */
#define PROC_GRACE_MS 2000              /* default SIGTERM -> SIGKILL grace */

/* Environment changes for a child. Both lists are NULL-terminated and
 * borrowed (read during the call only); either may be NULL. */
typedef struct proc_env {
    /* Names removed from the inherited environment, besides the ones that
     * are always removed (see above). */
    const char *const *scrub;
    /* "NAME=value" entries set in the child, replacing an inherited
     * variable of the same name. ERR_USAGE when an entry has no '=' or an
     * empty name, names BAND_API_KEY_USER or BAND_API_KEY, or holds a
     * registered secret. */
    const char *const *add;
} proc_env;

typedef struct proc_opts {
    /* Wall-clock bound for the whole run, > 0 (ERR_USAGE otherwise): no
     * child of this suite may run unbounded. */
    int timeout_ms;
    /* Time between SIGTERM and SIGKILL on timeout; 0 = PROC_GRACE_MS. */
    int grace_ms;
    /* Working directory of the child; NULL = this process's. */
    const char *cwd;
    proc_env env;
    /* Bytes kept of stdout and of stderr, each; 0 = PROC_CAPTURE_MAX. Past
     * it the child's output is still read (so it never blocks on a full
     * pipe) but dropped, and the stream's truncated flag is set. */
    size_t capture_max;
    /* Called from the waiting loop every few tens of milliseconds while the
     * child runs (NULL = never), so a caller can show a long wait
     * (progress.h). It must not block. */
    void (*on_tick)(void *ud);
    void *tick_ud;
} proc_opts;

/* One captured stream: malloc'd, always NUL-terminated (even when empty),
 * but may hold NULs itself: use len. Owned by the proc_result. */
typedef struct proc_stream {
    char *data;
    size_t len;
    int truncated;
} proc_stream;

typedef struct proc_result {
    int exited;      /* 1: it exited and `status` is its exit code */
    int status;      /* exit code, when exited */
    int signal;      /* the signal that ended it, when !exited */
    int timed_out;   /* 1: the deadline passed and the group was killed */
    int64_t duration_ms;
    proc_stream out; /* stdout */
    proc_stream err; /* stderr */
} proc_result;

/* Runs argv[0] (a path, or a name searched in the child's PATH) with
 * arguments argv[1..] (NULL-terminated), stdin from /dev/null, and waits
 * for it, at most opts->timeout_ms. *res is always initialised, and must be
 * released with proc_result_free whatever the return code.
 *
 * Returns ERR_OK when the program ran and ended by itself, whatever its
 * exit status or signal (read them in *res); ERR_TIMEOUT when it was killed
 * at the deadline (*res holds what it printed so far); ERR_INTERRUPTED when
 * a stop signal (sig_pending) arrived before or during the run: the group
 * was killed (or nothing started); ERR_NOTFOUND when
 * the program does not exist or is not executable; ERR_USAGE for bad
 * arguments or a secret in argv or env.add; ERR_IO when cwd cannot be
 * entered; ERR_PROCESS when it cannot be started; ERR_NOMEM.
 *
 * Once the program has exited, output still held open by a process it left
 * behind is read for a short while only (PROC_DRAIN_MS), never until that
 * process ends. */
#define PROC_DRAIN_MS 200
err_code proc_run(const char *const argv[], const proc_opts *opts,
                  proc_result *res, char *err);

/* Frees the captured output; safe on a zeroed or already freed result. */
void proc_result_free(proc_result *res);

/* The last non-empty line of a captured stream into out (cap bytes),
 * redacted whole before it is cut to fit (a cut first could leave half a
 * secret that no longer matches): the best words a failed program left. */
void proc_stream_last_line(const proc_stream *s, char *out, size_t cap);

/* A program started by proc_launch_detached. */
typedef struct proc_detached {
    pid_t pid;            /* also its process group and session id */
    uint64_t start_token; /* plat_proc_start_token(pid) at launch, never 0 */
} proc_detached;

/* Starts argv detached from this process: its own session (setsid, so it
 * leads a new process group and has no controlling terminal), stdin from
 * /dev/null, stdout and stderr appended to log_path (created 0600 if
 * missing, opened O_APPEND so concurrent writers never overwrite each
 * other), in cwd (NULL = this process's), with the environment rules above.
 * It is not a child of this process: it survives this process and is never
 * a zombie here. Returns once the program is running (its exec succeeded),
 * with its pid and start token (pid plus token survive pid reuse; see
 * platform.h).
 *
 * ERR_NOTFOUND: no such program. ERR_IO: the log or cwd cannot be opened.
 * ERR_USAGE: bad arguments or a secret in argv/env. ERR_PROCESS: fork or
 * exec failed, or the program ended before it could be identified.
 * ERR_TIMEOUT: the intermediate child did not report within a few seconds. */
err_code proc_launch_detached(const char *const argv[], const char *cwd,
                              const proc_env *env, const char *log_path,
                              proc_detached *out, char *err);

/* Ends the process group `pgid` (a detached launch's pid): SIGTERM (and
 * SIGCONT, so a stopped group can act on it) to the group; then, once the
 * group's leader has ended or grace_ms (0 = PROC_GRACE_MS) has passed,
 * SIGKILL to whatever is left of the group, and to the leader by pid when
 * it still runs (it may have moved to another group); then waits up to a
 * second for the leader to be gone. The grace is measured on the leader because only
 * the leader can be watched portably. A zombie leader counts as gone; if it
 * is the caller's own child it is reaped here and its status is lost.
 *
 * ERR_OK when the leader is gone (also when the group was already gone);
 * ERR_USAGE for pgid <= 1; ERR_PROCESS when signalling is not permitted;
 * ERR_TIMEOUT when the leader survives SIGKILL (uninterruptible sleep). */
err_code proc_kill_group(pid_t pgid, int grace_ms, char *err);

/* Writes an env file for `sbx exec --env-file`: one `NAME=value` line per
 * entry of `entries` (NULL-terminated), to dir/name, mode 0600, created with
 * O_CREAT|O_EXCL|O_NOFOLLOW so it never follows a planted symlink nor
 * reuses an existing file. The full path is written to path_out
 * (path_cap bytes).
 *
 * The file holds secrets: dir must be a real directory (not a symlink)
 * that only its owner can enter (no group/other permission bits), and
 * `name` a plain file name (no '/'). Nothing of the entries' values ever
 * appears in a message.
 *
 * ERR_USAGE: a malformed entry (no '=', a name that is not [A-Za-z_][A-Za-z0-9_]*,
 * a newline in the value: it would smuggle in another line), a bad name,
 * or a path that does not fit. ERR_CONFIG: dir is missing, not a directory,
 * or open to others. ERR_IO: the file exists already or cannot be written
 * (nothing is left behind on failure). */
err_code proc_envfile_write(const char *dir, const char *name,
                            const char *const *entries, char *path_out,
                            size_t path_cap, char *err);

/* Removes an env file. ERR_OK also when it is already gone (removal runs on
 * every exit path, possibly twice); ERR_IO otherwise. */
err_code proc_envfile_remove(const char *path, char *err);

#endif
