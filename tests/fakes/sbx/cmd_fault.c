/* cmd_fault: see cmd_fault.h. */
#include "cmd_fault.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ctl.h"
#include "daemon.h"
#include "store.h"

#define HANG_POLL_MS 100
#define HANG_MAX_S 600

/* Does `key` name this invocation: its command, or command and subcommand? */
static int names_invocation(const char *key, int argc, char **argv)
{
    if (!strcmp(key, argv[0]))
        return 1;
    size_t n = strlen(argv[0]);
    return argc > 1 && !strncmp(key, argv[0], n) && key[n] == ' ' && !strcmp(key + n + 1, argv[1]);
}

static int hang_listed(const fsbx *f, int argc, char **argv)
{
    store s;
    if (store_open(&s, f->state, NULL) != ERR_OK)
        return 0;
    int listed = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, store_get(&s, "hang")) {
        if (cJSON_IsString(it) && names_invocation(it->valuestring, argc, argv))
            listed = 1;
    }
    store_close(&s);
    return listed;
}

int fault_hang_if_asked(const fsbx *f, int argc, char **argv)
{
    const char *env = getenv("FAKE_SBX_HANG");
    int by_env = env && *env && names_invocation(env, argc, argv);
    if (!by_env && !hang_listed(f, argc, argv))
        return 0;
    const char *max = getenv("FAKE_SBX_HANG_MAX_S");
    int64_t bound = (max && atoi(max) > 0 ? atoi(max) : HANG_MAX_S) * (int64_t)1000;
    int64_t deadline = clock_mono_ms() + bound;
    /* The store lock is never held while hanging: other calls go on. */
    while (clock_mono_ms() < deadline) {
        fsbx_sleep_ms(HANG_POLL_MS);
        if (!by_env && !hang_listed(f, argc, argv))
            return 0;
    }
    return 124;
}

/* Adds or clears an entry of the store's "hang" list. */
static int set_hang(const fsbx *f, const char *what)
{
    char err[ERR_BUFSZ];
    store s;
    if (store_open(&s, f->state, err) != ERR_OK)
        return fsbx_fail(NULL, "%s", err);
    cJSON *hang = store_get(&s, "hang");
    if (!strcmp(what, "off"))
        cJSON_ReplaceItemInObjectCaseSensitive(s.root, "hang", cJSON_CreateArray());
    else
        cJSON_AddItemToArray(hang, cJSON_CreateString(what));
    err_code rc = store_save(&s, err);
    store_close(&s);
    return rc == ERR_OK ? 0 : fsbx_fail(NULL, "%s", err);
}

/* Hides NAME, or ("off") shows every hidden sandbox again. */
static int set_vanish(const fsbx *f, const char *what)
{
    char err[ERR_BUFSZ];
    store s;
    if (store_open(&s, f->state, err) != ERR_OK)
        return fsbx_fail(NULL, "%s", err);
    int rc = 0;
    if (!strcmp(what, "off")) {
        cJSON *sb;
        cJSON_ArrayForEach(sb, store_get(&s, "sandboxes")) {
            store_set_bool(sb, "hidden", 0);
        }
    } else {
        cJSON *sb = store_sandbox(&s, what, 0);
        if (sb)
            store_set_bool(sb, "hidden", 1);
        else
            rc = fsbx_no_sandbox(what);
    }
    if (rc == 0 && store_save(&s, err) != ERR_OK)
        rc = fsbx_fail(NULL, "%s", err);
    store_close(&s);
    return rc;
}

/* net-cut, stall and freeze: the daemon holds the timer. */
static int daemon_fault(const fsbx *f, const char *kind, const char *seconds)
{
    char *end;
    double s = strtod(seconds, &end);
    if (end == seconds || *end || !(s > 0))
        return fsbx_fail(NULL, "_fault %s: SECONDS must be a positive number", kind);
    char line[CTL_LINE_MAX], reply[CTL_LINE_MAX], err[ERR_BUFSZ];
    snprintf(line, sizeof line, "%s %s", kind, seconds);
    if (ctl_request(f->sock, line, reply, sizeof reply, err) != ERR_OK)
        return fsbx_fail(NULL, "_fault %s: %s", kind, err);
    return 0;
}

int cmd_fault(const fsbx *f, int argc, char **argv)
{
    if (argc != 3)
        return fsbx_fail("usage: sbx _fault net-cut|stall|freeze SECONDS | hang CMD|off | "
                         "vanish NAME|off",
                         "_fault takes a kind and one argument");
    const char *kind = argv[1], *arg = argv[2];
    if (!strcmp(kind, "net-cut") || !strcmp(kind, "stall") || !strcmp(kind, "freeze"))
        return daemon_fault(f, kind, arg);
    if (!strcmp(kind, "hang"))
        return set_hang(f, arg);
    if (!strcmp(kind, "vanish"))
        return set_vanish(f, arg);
    return fsbx_fail(NULL, "unknown fault \"%s\"", kind);
}

int cmd_ps(const fsbx *f, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    long pid;
    if (daemon_up(f, &pid))
        printf("daemon %ld\n", pid);
    char err[ERR_BUFSZ];
    store s;
    if (store_open(&s, f->state, err) != ERR_OK)
        return fsbx_fail(NULL, "%s", err);
    store_prune_sessions(&s);
    const cJSON *it;
    cJSON_ArrayForEach(it, store_get(&s, "sessions")) {
        printf("session %.0f %s\n", store_num(it, "pgid"), store_str(it, "sandbox"));
    }
    store_save(&s, NULL);
    store_close(&s);
    return 0;
}
