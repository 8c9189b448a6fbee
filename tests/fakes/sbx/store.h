/* store: the fake sbx's state, one JSON document in FAKE_SBX_STATE.
 *
 * Many fake processes use it at once: CLI calls, long-running exec
 * sessions, the daemon logging what its proxy decided. So every access is
 * a short transaction under an exclusive fcntl lock on state/lock: open
 * (lock and load), read or change the document, save (atomic rename),
 * close (unlock). Never hold it while talking to the daemon: the daemon
 * takes it too, and would wait for the caller that waits for it.
 *
 * The document, every key always present after store_open:
 *   policy    {"mode": "balanced"|...|null, "rules": [{id, scope, decision, resource}]}
 *             scope "" = global, else a sandbox name; decision allow|deny
 *   sandboxes [{name, id, agent, status, workspaces[], created_at, last_used_at, hidden}]
 *   sessions  [{pgid, token, exec_pid, sandbox, detached}]  exec'd process
 *             groups; token = plat_proc_start_token(pgid), against pid reuse
 *   hang      ["ls", ...]                subcommands that hang (fault.h)
 *   log       [{sandbox, host, proxy, rule, reason, blocked, last_seen, count}]
 */
#ifndef FSBX_STORE_H
#define FSBX_STORE_H

#include <cjson/cJSON.h>
#include <sys/types.h>

#include "err.h"

#define STORE_LOCK_WAIT_MS 10000

typedef struct store {
    int lock_fd;
    cJSON *root;
    char dir[4096];
} store;

/* An exclusive fcntl lock on dir/name (created 0600), waiting at most
 * STORE_LOCK_WAIT_MS: ERR_TIMEOUT, ERR_IO. Released by store_unlock (or
 * process exit). The store uses "lock"; the daemon's start uses its own. */
err_code store_lock(const char *dir, const char *name, int *fd, char *err);
void store_unlock(int fd);

/* Locks (waiting at most STORE_LOCK_WAIT_MS: ERR_TIMEOUT) and loads the
 * document; a missing file is a fresh, empty world. ERR_CORRUPT when the
 * file is not the JSON this module wrote. On failure nothing is held. */
err_code store_open(store *s, const char *dir, char *err);

/* Writes the document (temp file + rename) and stays open. ERR_IO. */
err_code store_save(store *s, char *err);

/* Frees the document and unlocks. Safe after a failed open. */
void store_close(store *s);

/* Deletes the state file (reset). The store stays open and empty. */
err_code store_wipe(store *s, char *err);

/* The top-level members; never NULL once open. */
cJSON *store_get(store *s, const char *key);

/* The sandbox named `name`, or NULL. Hidden ones (the vanish fault) only
 * when with_hidden. */
cJSON *store_sandbox(store *s, const char *name, int with_hidden);

/* Drops sessions whose group leader has ended (zombies included). */
void store_prune_sessions(store *s);

/* Small typed accessors: a missing or wrongly typed member reads as ""
 * or 0. The setters replace the member; they return -1 out of memory. */
const char *store_str(const cJSON *obj, const char *key);
double store_num(const cJSON *obj, const char *key);
int store_set_str(cJSON *obj, const char *key, const char *value);
int store_set_num(cJSON *obj, const char *key, double value);
int store_set_bool(cJSON *obj, const char *key, int value);
int store_bool(const cJSON *obj, const char *key);

#endif
