/* sbx: Docker's `sbx` CLI, driven as a subprocess.
 *
 * sbx is pre-1.0 and changes its output between releases, and its daemon
 * can wedge so that a plain `sbx ls` never returns (reference/sbx-cli.md,
 * sections 2 and 5). So every call here:
 * - runs sbx by argv (proc_run, never a shell) under a deadline; a hung sbx
 *   is ERR_TIMEOUT with a message naming the command, never a hang;
 * - parses loosely: JSON from the first line that starts with `{` (a daemon
 *   banner may come first, on stdout on some platforms), the version from
 *   the first `vX.Y.Z[-suffix]` token anywhere, unknown fields ignored;
 * - reports sbx's own failure with its own words: the first `ERROR: `,
 *   `Error: ` or `error: ` line of stderr goes into the message, redacted;
 * - removes sandboxes with `rm --force` only (off a terminal, plain `rm`
 *   refuses).
 *
 * Nothing here holds state between calls. Messages never hold a secret:
 * everything sbx prints passes redact before it reaches a message or a
 * returned text. Secrets never go on sbx's command line either (proc_run
 * refuses them); the agent key reaches `sbx exec` through --env-file.
 */
#ifndef SMOKE_SBX_H
#define SMOKE_SBX_H

#include <stddef.h>
#include <stdio.h>

#include "err.h"
#include "proc.h"

#define SBX_TIMEOUT_MS 60000       /* default bound of one sbx call */
#define SBX_SLOW_TIMEOUT_MS 300000 /* create and daemon start: image pulls, VM boot */
#define SBX_VERSION_SZ 64
#define SBX_ARGV_MAX 64            /* bound of a built exec command line */

typedef struct sbx_ctx {
    char bin[1024];      /* the sbx program: a path, or a name found on PATH */
    int timeout_ms;      /* bound of every call but the slow ones */
    int slow_timeout_ms; /* bound of `create` and `daemon start -d` */
    /* Environment changes for every sbx child (proc.h rules: the Band keys
     * are always removed). Borrowed: the lists must outlive the context.
     * The suite leaves it empty; tests point the fake at its state here. */
    proc_env env;
    /* Where a call that runs over 2 s shows what it waits for, the time
     * elapsed and its deadline (progress.h); NULL = silent. Borrowed. */
    FILE *progress;
} sbx_ctx;

/* bin NULL or "" = "sbx" (config's SBX_BIN is the caller's business);
 * timeouts <= 0 take SBX_TIMEOUT_MS and SBX_SLOW_TIMEOUT_MS. ERR_USAGE when
 * bin does not fit. */
err_code sbx_init(sbx_ctx *ctx, const char *bin, int timeout_ms, int slow_timeout_ms,
                  char *err);

/* ---- pure parsers: any bytes in, never a crash (they are fuzzed) ---- */

/* One sandbox of `sbx ls --json`. Strings are malloc'd and owned by the
 * sbx_list (or sbx_sandbox, for sbx_find) that holds them. */
typedef struct sbx_sandbox {
    char *name;         /* never NULL, never empty */
    char *id;           /* NULL when this sbx version does not report it */
    char *agent;        /* "" when missing */
    char *status;       /* "running", "stopped", ...; "" when missing */
    char **workspaces;  /* host paths, as given at create; first = primary */
    size_t n_workspaces;
} sbx_sandbox;

typedef struct sbx_list {
    sbx_sandbox *items;
    size_t count;
} sbx_list;

/* Parses `sbx ls --json` output (text need not be NUL-terminated). The JSON
 * starts at the first line whose first byte is `{`; anything before it (a
 * banner) and after the object is ignored. "sandboxes" null or missing is
 * an empty list. Per sandbox only "name" (a non-empty string) is required;
 * other known fields of the wrong type count as missing, unknown ones are
 * ignored. On success *out is owned by the caller (sbx_list_free).
 * ERR_CORRUPT: no JSON object, not valid JSON, "sandboxes" neither an
 * array nor null, a sandbox that is not an object or has no name.
 * ERR_NOMEM. *out is empty on failure. */
err_code sbx_parse_ls(const char *text, size_t len, sbx_list *out, char *err);

/* Frees what a list owns; safe on a zeroed list. */
void sbx_list_free(sbx_list *list);

/* The sandbox named `name` in list, or NULL. */
const sbx_sandbox *sbx_list_find(const sbx_list *list, const char *name);

/* Frees what one sandbox owns (sbx_find's copy); safe on a zeroed one. */
void sbx_sandbox_free(sbx_sandbox *sb);

/* True when status is exactly "stopped": sbx has more states than
 * running/stopped and anything else counts as not stopped. */
int sbx_is_stopped(const sbx_sandbox *sb);

/* Finds the version in `sbx version` output: the first token
 * v<digits>.<digits>.<digits>, optionally followed by -suffix of
 * [0-9A-Za-z.-], not preceded by a letter, digit or dot. Covers the modern
 * `sbx version: v0.45.1 <sha>` line and the legacy `Client Version:  v0.29.0`
 * form alike. Writes it, with its leading `v`, to out (SBX_VERSION_SZ
 * bytes). ERR_CORRUPT when there is none or it does not fit. */
err_code sbx_parse_version(const char *text, size_t len, char out[SBX_VERSION_SZ],
                           char *err);

/* sbx's own error line in stderr output: the first line starting with
 * `ERROR: `, `Error: ` or `error: ` (also after a `[sbx] ` prefix, as
 * Windows builds print), copied whole and redacted into out (cap bytes).
 * Returns 1 when found, 0 (out = "") when not. */
int sbx_parse_error(const char *text, size_t len, char *out, size_t cap);

/* ---- calls; each returns ERR_TIMEOUT when sbx does not answer in time,
 * ERR_NOTFOUND when the sbx program is missing, ERR_PROCESS when sbx exits
 * non-zero (the message holds its ERROR line), ERR_NOMEM ---- */

/* `sbx version`. ERR_CORRUPT when the output names no version. */
err_code sbx_version(const sbx_ctx *ctx, char out[SBX_VERSION_SZ], char *err);

/* `sbx ls --json`, parsed as sbx_parse_ls (ERR_CORRUPT likewise). */
err_code sbx_ls(const sbx_ctx *ctx, sbx_list *out, char *err);

/* The sandbox named `name` from `sbx ls --json`, copied into *out (free
 * with sbx_sandbox_free). ERR_NOTFOUND when sbx does not list it. */
err_code sbx_find(const sbx_ctx *ctx, const char *name, sbx_sandbox *out, char *err);

/* `sbx create --name NAME shell WORKSPACE` (slow timeout). sbx refuses a
 * duplicate name (409) and an uninitialised network policy: ERR_PROCESS. */
err_code sbx_create(const sbx_ctx *ctx, const char *name, const char *workspace, char *err);

/* `sbx policy allow network --sandbox NAME "h1,h2"`: hosts is a
 * NULL-terminated list of resources (host, host:port, *.domain, **),
 * joined with commas. ERR_USAGE when it is empty or a resource is empty or
 * holds a comma or blank. */
err_code sbx_policy_allow(const sbx_ctx *ctx, const char *name, const char *const *hosts,
                          char *err);

/* What `sbx exec` runs. Borrowed; NULL-terminated lists. */
typedef struct sbx_exec_spec {
    const char *sandbox;     /* required */
    const char *const *cmd;  /* required, cmd[0] non-empty: run without a shell */
    const char *const *env;  /* "NAME=value" each passed as -e; never a secret */
    const char *env_file;    /* --env-file (how a secret gets in), or NULL */
    const char *workdir;     /* --workdir, or NULL for the primary workspace */
} sbx_exec_spec;

/* The argv of `sbx exec [-e K=V]... [--env-file F] [--workdir WS] NAME
 * CMD...`, for a caller that launches it itself (the detached agent launch:
 * proc_launch_detached). Pointers borrow from ctx and spec and the vector
 * is NULL-terminated. ERR_USAGE when spec is incomplete or the line would
 * pass SBX_ARGV_MAX. */
typedef struct sbx_argv {
    const char *v[SBX_ARGV_MAX + 1];
    size_t n;
} sbx_argv;
err_code sbx_exec_argv(const sbx_ctx *ctx, const sbx_exec_spec *spec, sbx_argv *out,
                       char *err);

/* Runs `sbx exec` to completion under timeout_ms (0 = ctx->timeout_ms) and
 * fills *res (always initialised; proc_result_free it) with the command's
 * exit status and output: sbx returns the inner status verbatim.
 * ERR_OK whenever the command ran, whatever its status. Because sbx's own
 * failures also exit 1, an exit status of 1 together with an sbx error
 * line on stderr (`ERROR: no sandbox named 'x'`) is taken as sbx failing:
 * ERR_PROCESS with that line; so is sbx itself dying of a signal.
 * ERR_TIMEOUT: killed at the deadline. */
err_code sbx_exec(const sbx_ctx *ctx, const sbx_exec_spec *spec, int timeout_ms,
                  proc_result *res, char *err);

/* `sbx daemon stop`: ends every sandbox session (and, most likely, stops
 * the sandboxes). */
err_code sbx_daemon_stop(const sbx_ctx *ctx, char *err);

/* `sbx daemon start -d` (slow timeout): start detached and return. */
err_code sbx_daemon_start(const sbx_ctx *ctx, char *err);

/* `sbx rm --force NAME`. */
err_code sbx_rm(const sbx_ctx *ctx, const char *name, char *err);

/* `sbx policy log [NAME]` (name NULL = every sandbox): the text output,
 * redacted, malloc'd into *text (caller frees). */
err_code sbx_policy_log(const sbx_ctx *ctx, const char *name, char **text, char *err);

#endif
