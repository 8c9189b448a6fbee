/* cmd_daemon: see cmd_daemon.h. */
#include "cmd_daemon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "policy.h"
#include "sandboxd.h"
#include "store.h"

static const char *version_text(void)
{
    const char *v = getenv("FAKE_SBX_VERSION");
    return v && *v ? v : FSBX_VERSION;
}

int cmd_version(const fsbx *f, int argc, char **argv)
{
    int json = argc > 1 && !strcmp(argv[1], "--json");
    if (json) {
        printf("{\n  \"version\": \"%s\",\n  \"commit\": \"%s\"\n}\n", version_text(), FSBX_COMMIT);
    } else if (fsbx_flag("FAKE_SBX_LEGACY_VERSION")) {
        printf("Client Version:  %s %s\n", version_text(), FSBX_COMMIT);
        if (daemon_up(f, NULL))
            printf("Server Version:  %s %s\n", version_text(), FSBX_COMMIT);
        else
            printf("Server Version:  Unavailable (daemon not running \xe2\x80\x94 use 'sbx daemon "
                   "start')\n");
    } else {
        printf("sbx version: %s %s\n", version_text(), FSBX_COMMIT);
    }
    return 0;
}

/* `daemon start --policy MODE` initialises the policy when it is not yet. */
static int init_policy(const fsbx *f, const char *mode)
{
    if (!pol_mode_valid(mode))
        return fsbx_fail(NULL, "invalid --policy \"%s\": allow-all, balanced or deny-all", mode);
    char err[ERR_BUFSZ];
    store s;
    if (store_open(&s, f->state, err) != ERR_OK)
        return fsbx_fail(NULL, "%s", err);
    cJSON *policy = store_get(&s, "policy");
    err_code rc = ERR_OK;
    if (!pol_mode_valid(store_str(policy, "mode"))) {
        store_set_str(policy, "mode", mode);
        rc = store_save(&s, err);
    }
    store_close(&s);
    return rc == ERR_OK ? 0 : fsbx_fail(NULL, "%s", err);
}

static int daemon_start_cmd(const fsbx *f, int argc, char **argv)
{
    int detach = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-d") || !strcmp(argv[i], "--detach")) {
            detach = 1;
        } else if (!strcmp(argv[i], "--policy") && i + 1 < argc) {
            if (init_policy(f, argv[++i]))
                return 1;
        } else {
            return fsbx_fail(NULL, "unknown flag: %s", argv[i]);
        }
    }
    if (daemon_up(f, NULL)) {
        printf("Daemon is already running at %s\n", f->sock);
        return 0;
    }
    if (!detach) {
        printf("Starting daemon at %s (Ctrl+C to stop)...\n", f->sock);
        fflush(stdout);
        return sandboxd_run(f, stdout);
    }
    char err[ERR_BUFSZ];
    long pid;
    printf("Starting sandboxd daemon...\n");
    fflush(stdout);
    if (daemon_start(f, NULL, &pid, err) != ERR_OK)
        return fsbx_fail(NULL, "%s", err);
    printf("Daemon started (PID: %ld, socket: %s)\nLogs: %s\n", pid, f->sock, f->log);
    return 0;
}

static int daemon_stop_cmd(const fsbx *f)
{
    char err[ERR_BUFSZ];
    printf("Stopping daemon at %s...\n", f->sock);
    fflush(stdout);
    int was_up;
    if (daemon_stop(f, &was_up, NULL, err) != ERR_OK)
        return fsbx_fail(NULL, "%s", err);
    printf(was_up ? "\xe2\x9c\x93 Daemon stopped successfully\n" : "Daemon is not running\n");
    return 0;
}

static int daemon_status_cmd(const fsbx *f, int argc, char **argv)
{
    long pid = 0;
    int up = daemon_up(f, &pid);
    if (argc > 1 && !strcmp(argv[1], "--json"))
        printf("{\n  \"status\": \"%s\",\n  \"socket\": \"%s\",\n  \"pid\": %ld\n}\n",
               up ? "running" : "stopped", f->sock, up ? pid : 0L);
    else if (up)
        printf("Status: running\nSocket: %s\n", f->sock);
    else
        printf("Status: stopped\nSocket: %s (not connected)\n", f->sock);
    return 0;
}

int cmd_daemon(const fsbx *f, int argc, char **argv)
{
    const char *sub = argc > 1 ? argv[1] : "";
    if (!strcmp(sub, "start"))
        return daemon_start_cmd(f, argc - 1, argv + 1);
    if (!strcmp(sub, "stop"))
        return daemon_stop_cmd(f);
    if (!strcmp(sub, "status"))
        return daemon_status_cmd(f, argc - 1, argv + 1);
    if (!strcmp(sub, "restart")) {
        static char *start_argv[] = {"start", "-d", NULL};
        int rc = daemon_stop_cmd(f);
        return rc ? rc : daemon_start_cmd(f, 2, start_argv);
    }
    if (!strcmp(sub, "log-level"))
        return 0;
    return fsbx_fail("See 'sbx daemon --help'.", "unknown command \"%s\" for \"sbx daemon\"", sub);
}

int cmd_daemon_process(const fsbx *f, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return sandboxd_run(f, stdout);
}
