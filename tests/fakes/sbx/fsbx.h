/* fsbx: the fake sbx's world: where its state lives, which executable it
 * is, and the few output conventions every command shares.
 *
 * The fake mirrors Docker's `sbx` CLI (reference/sbx-cli.md section 6) for
 * the offline tests and the rehearsal. Its whole state lives in the folder
 * named by FAKE_SBX_STATE, which is required: a fake that silently fell
 * back to some default folder could mix two tests' worlds.
 *
 * Environment read by the fake (all optional but FAKE_SBX_STATE):
 *   FAKE_SBX_STATE           the state folder (must exist)
 *   FAKE_SBX_VERSION         version to report (default v0.45.1)
 *   FAKE_SBX_LEGACY_VERSION=1  two-line `Client Version:` / `Server Version:`
 *   FAKE_SBX_BANNER_STDOUT=1 daemon auto-start banner on stdout (Windows)
 *   FAKE_SBX_NO_ID=1         `ls --json` omits "id" (v0.31-v0.32)
 *   FAKE_SBX_EXTRA_FIELDS=1  `ls --json` adds fields the harness must ignore
 *   FAKE_SBX_SIGNED_OUT=1    commands fail with `ERROR: Not authenticated`
 *   FAKE_SBX_HANG=CMD        this invocation of CMD hangs (cmd_fault.h)
 *   FAKE_SBX_HANG_MAX_S      bound of any hang, seconds (default 600)
 *   FAKE_SBX_STOP_KILL=1     `daemon stop` SIGKILLs the sandboxes' processes
 *                            (a VM switched off) instead of SIGTERM first
 *   FAKE_SBX_CA_FILE         the TLS world's CA, trusted inside sandboxes
 *                            (cmd_exec.h)
 *   FAKE_UV_AGENT            what the fake uv runs (uv.c)
 * Files in the state folder: state.json and lock (store.h), sandboxd.sock
 * and daemon.log (the daemon), detached.log (output of `exec -d`),
 * sandboxes/NAME/home (each sandbox's HOME).
 */
#ifndef FSBX_H
#define FSBX_H

#include <limits.h>
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>

#include "err.h"

#define FSBX_VERSION "v0.45.1"
#define FSBX_COMMIT "9c41d7be2f0a5e63c8b1d4f7a2e9c0b3d6f8a1e5"
#define FSBX_NAME_MAX 128

typedef struct fsbx {
    char state[PATH_MAX];   /* FAKE_SBX_STATE */
    char self[PATH_MAX];    /* absolute path of this executable */
    char bin_dir[PATH_MAX]; /* its folder: first on exec'd commands' PATH */
    char sock[PATH_MAX];    /* the daemon's control socket */
    char log[PATH_MAX];     /* the daemon's log */
    int banner_stdout;      /* FAKE_SBX_BANNER_STDOUT=1 */
} fsbx;

/* Fills *f from the environment and argv[0]. ERR_CONFIG when FAKE_SBX_STATE
 * is unset or not a folder, ERR_NOTFOUND when this executable cannot be
 * located. */
err_code fsbx_init(fsbx *f, const char *argv0, char *err);

/* True when the environment variable is set to "1". */
int fsbx_flag(const char *name);

/* sbx's own failure: `ERROR: <message>` on stderr, then, when hint is not
 * NULL, a blank line and the hint block. Returns 1, sbx's exit status. */
int fsbx_fail(const char *hint, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The sandbox-missing block of sbx v0.39 (`ERROR: no sandbox named 'x'`
 * plus how to create one). Returns 1. */
int fsbx_no_sandbox(const char *name);

/* True for a valid sandbox name: letters, digits, '-', '.', '+'. */
int fsbx_valid_name(const char *name);

/* state/sandboxes/NAME/home into buf. ERR_USAGE when it does not fit. */
err_code fsbx_home(const fsbx *f, const char *name, char *buf, size_t cap, char *err);

/* mkdir -p of state/sandboxes/NAME/home, and rm -rf of state/sandboxes/NAME. */
err_code fsbx_make_home(const fsbx *f, const char *name, char *err);
void fsbx_remove_sandbox_dir(const fsbx *f, const char *name);

/* Now as RFC 3339 with microseconds, as sbx prints it ("...T08:55:17.750250Z"). */
void fsbx_now_rfc3339(char *buf, size_t cap);

/* A random version 4 UUID (36 characters + NUL). */
void fsbx_uuid(char out[37]);

/* Prints JSON as sbx (Go's json.MarshalIndent) does: two-space indent,
 * `"key": value`, every array element and member on its own line, empty
 * containers as [] and {}; then a newline. */
void fsbx_print_json(FILE *out, const cJSON *item);

/* Sleeps ms milliseconds (nanosleep, resumed after signals). */
void fsbx_sleep_ms(int ms);

#endif
