/* daemon: see daemon.h. */
#include "daemon.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "clock.h"
#include "ctl.h"
#include "platform.h"
#include "proc.h"
#include "store.h"

#define POLL_STEP_MS 20
#define MAX_SESSIONS 256

int daemon_up(const fsbx *f, long *pid)
{
    return ctl_alive(f->sock, pid);
}

static err_code spawn(const fsbx *f, long *pid, char *err)
{
    const char *const argv[] = {f->self, "__daemon", NULL};
    proc_detached d;
    err_code rc = proc_launch_detached(argv, f->state, NULL, f->log, &d, err);
    if (rc != ERR_OK)
        return rc;
    int64_t deadline = clock_mono_ms() + DAEMON_START_WAIT_MS;
    while (clock_mono_ms() < deadline) {
        if (daemon_up(f, pid))
            return ERR_OK;
        fsbx_sleep_ms(POLL_STEP_MS);
    }
    kill(d.pid, SIGKILL);
    return err_set(err, ERR_PROCESS,
                   "ensure daemon: daemon failed to start properly after 10 retries, check logs "
                   "at: %s",
                   f->log);
}

err_code daemon_start(const fsbx *f, int *started, long *pid, char *err)
{
    long dummy;
    if (!pid)
        pid = &dummy;
    if (started)
        *started = 0;
    int lock;
    err_code rc = store_lock(f->state, "daemon.lock", &lock, err);
    if (rc != ERR_OK)
        return rc;
    if (!daemon_up(f, pid)) {
        rc = spawn(f, pid, err);
        if (rc == ERR_OK && started)
            *started = 1;
    }
    store_unlock(lock);
    return rc;
}

int daemon_autostart(const fsbx *f)
{
    if (daemon_up(f, NULL))
        return 0;
    FILE *out = f->banner_stdout ? stdout : stderr;
    fprintf(out, "Starting sandboxd daemon...\n");
    fflush(out);
    char err[ERR_BUFSZ];
    int started;
    long pid;
    if (daemon_start(f, &started, &pid, err) != ERR_OK)
        return fsbx_fail(NULL, "%s", err);
    fprintf(out, "Daemon started (PID: %ld, socket: %s)\nLogs: %s\n", pid, f->sock, f->log);
    fflush(out);
    return 0;
}

/* Process groups of the sessions of `sandbox` (NULL: all), from the store;
 * when stop_all, every sandbox is marked stopped in the same transaction. */
static err_code collect(const fsbx *f, const char *sandbox, int stop_all, pid_t *pgids,
                        size_t *n, int *stopped, char *err)
{
    *n = 0;
    store s;
    err_code rc = store_open(&s, f->state, err);
    if (rc != ERR_OK)
        return rc;
    store_prune_sessions(&s);
    cJSON *it;
    cJSON_ArrayForEach(it, store_get(&s, "sessions")) {
        if (*n < MAX_SESSIONS && (!sandbox || !strcmp(store_str(it, "sandbox"), sandbox)))
            pgids[(*n)++] = (pid_t)store_num(it, "pgid");
    }
    if (stop_all) {
        int count = 0;
        cJSON_ArrayForEach(it, store_get(&s, "sandboxes")) {
            count += strcmp(store_str(it, "status"), "stopped") != 0;
            store_set_str(it, "status", "stopped");
        }
        if (stopped)
            *stopped = count;
        rc = store_save(&s, err);
    }
    store_close(&s);
    return rc;
}

static void end_groups(const pid_t *pgids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        proc_kill_group(pgids[i], SESSION_GRACE_MS, NULL);
}

err_code daemon_end_sessions(const fsbx *f, const char *sandbox, char *err)
{
    pid_t pgids[MAX_SESSIONS];
    size_t n;
    err_code rc = collect(f, sandbox, 0, pgids, &n, NULL, err);
    if (rc == ERR_OK)
        end_groups(pgids, n);
    return rc;
}

/* A zombie counts as gone: the daemon is an orphan, and PID 1 of some
 * containers never reaps orphans. */
static int pid_gone(long pid, uint64_t token)
{
    return !plat_proc_alive((pid_t)pid, token);
}

/* FAKE_SBX_STOP_KILL=1: the daemon stop kills the sandboxes' processes
 * outright, as a VM that is switched off does (no SIGTERM, no graceful
 * shutdown lines). */
static void kill_groups(const pid_t *pgids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (pgids[i] > 1)
            kill(-pgids[i], SIGKILL);
}

err_code daemon_stop(const fsbx *f, int *was_up, int *stopped, char *err)
{
    pid_t pgids[MAX_SESSIONS];
    size_t n;
    err_code rc = collect(f, NULL, 1, pgids, &n, stopped, err);
    if (rc != ERR_OK)
        return rc;
    const char *mode = getenv("FAKE_SBX_STOP_KILL");
    if (mode && !strcmp(mode, "1"))
        kill_groups(pgids, n);
    end_groups(pgids, n);
    long pid = 0;
    int up = daemon_up(f, &pid);
    if (was_up)
        *was_up = up;
    if (!up)
        return ERR_OK;
    uint64_t token = plat_proc_start_token((pid_t)pid);
    char reply[CTL_LINE_MAX];
    ctl_request(f->sock, "stop", reply, sizeof reply, NULL);
    int64_t deadline = clock_mono_ms() + DAEMON_STOP_WAIT_MS;
    while (!pid_gone(pid, token) && clock_mono_ms() < deadline)
        fsbx_sleep_ms(POLL_STEP_MS);
    if (!pid_gone(pid, token)) {
        kill((pid_t)pid, SIGKILL);
        return err_set(err, ERR_PROCESS, "daemon process %ld is still running after stop attempts",
                       pid);
    }
    return ERR_OK;
}

err_code daemon_proxy_port(const fsbx *f, const char *name, int *port, char *err)
{
    char line[CTL_LINE_MAX], reply[CTL_LINE_MAX];
    snprintf(line, sizeof line, "open %s", name);
    err_code rc = ctl_request(f->sock, line, reply, sizeof reply, err);
    if (rc != ERR_OK)
        return rc;
    if (sscanf(reply, "port %d", port) != 1)
        return err_set(err, ERR_PROTOCOL, "unexpected daemon reply: %s", reply);
    return ERR_OK;
}

void daemon_proxy_close(const fsbx *f, const char *name)
{
    char line[CTL_LINE_MAX], reply[CTL_LINE_MAX];
    snprintf(line, sizeof line, "close %s", name);
    ctl_request(f->sock, line, reply, sizeof reply, NULL);
}
