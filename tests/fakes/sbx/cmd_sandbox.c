/* cmd_sandbox: see cmd_sandbox.h. */
#include "cmd_sandbox.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "policy.h"
#include "store.h"
#include "table.h"

#define MAX_NAMES 64

static const char *const agents[] = {"shell", "claude", "codex", "copilot", "cursor",
                                     "docker-agent", "droid", "gemini", "kiro", "opencode",
                                     "devin", NULL};

/* ---- output ---- */

static cJSON *sandbox_json(const cJSON *sb)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", store_str(sb, "name"));
    if (!fsbx_flag("FAKE_SBX_NO_ID"))
        cJSON_AddStringToObject(o, "id", store_str(sb, "id"));
    cJSON_AddStringToObject(o, "agent", store_str(sb, "agent"));
    cJSON_AddStringToObject(o, "status", store_str(sb, "status"));
    cJSON *ws = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(sb, "workspaces"), 1);
    cJSON_AddItemToObject(o, "workspaces", ws ? ws : cJSON_CreateArray());
    cJSON_AddStringToObject(o, "created_at", store_str(sb, "created_at"));
    cJSON_AddStringToObject(o, "last_used_at", store_str(sb, "last_used_at"));
    if (fsbx_flag("FAKE_SBX_EXTRA_FIELDS")) {
        cJSON_AddStringToObject(o, "socket_path", "/run/sandboxes/fake/docker.sock");
        cJSON_AddFalseToObject(o, "workspace_missing");
        cJSON_AddItemToObject(o, "ports", cJSON_CreateArray());
        cJSON_AddItemToObject(o, "labels", cJSON_CreateObject());
    }
    return o;
}

static void print_table(store *s, FILE *out)
{
    static const char *const header[] = {"SANDBOX", "AGENT", "STATUS", "PORTS", "WORKSPACE"};
    table t;
    if (table_init(&t, 5, header) != 0)
        return;
    const cJSON *sb;
    cJSON_ArrayForEach(sb, store_get(s, "sandboxes")) {
        if (store_bool(sb, "hidden"))
            continue;
        const cJSON *ws = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(sb, "workspaces"), 0);
        const char *row[] = {store_str(sb, "name"), store_str(sb, "agent"), store_str(sb, "status"),
                             "", cJSON_IsString(ws) ? ws->valuestring : ""};
        table_add(&t, row);
    }
    table_print(&t, out);
    table_free(&t);
}

int cmd_ls(const fsbx *f, int argc, char **argv)
{
    int json = 0, quiet = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet"))
            quiet = 1;
        else if (argv[i][0] == '-')
            return fsbx_fail(NULL, "unknown flag: %s", argv[i]);
        else
            return fsbx_fail(NULL, "\"sbx ls\" accepts no arguments");
    }
    char err[ERR_BUFSZ];
    store s;
    if (store_open(&s, f->state, err) != ERR_OK)
        return fsbx_fail(NULL, "%s", err);
    cJSON *list = cJSON_CreateArray();
    const cJSON *sb;
    cJSON_ArrayForEach(sb, store_get(&s, "sandboxes")) {
        if (!store_bool(sb, "hidden"))
            cJSON_AddItemToArray(list, sandbox_json(sb));
    }
    int count = cJSON_GetArraySize(list);
    if (json) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddItemToObject(root, "sandboxes", list);
        fsbx_print_json(stdout, root);
        cJSON_Delete(root);
        list = NULL;
    } else if (quiet) {
        cJSON_ArrayForEach(sb, list) {
            printf("%s\n", store_str(sb, "name"));
        }
    } else if (count == 0) {
        printf("No sandboxes found.\nLaunch one: sbx run claude\n");
    } else {
        print_table(&s, stdout);
    }
    cJSON_Delete(list);
    store_close(&s);
    return 0;
}

/* ---- create ---- */

static int is_agent(const char *a)
{
    for (size_t i = 0; agents[i]; i++)
        if (!strcmp(agents[i], a))
            return 1;
    return 0;
}

/* Flags of create that take a value; all but --name are accepted and ignored. */
static int create_value_flag(const char *a)
{
    static const char *const flags[] = {"--name", "--cpus", "-m", "--memory", "-t", "--template",
                                        "--kit", "--mcp", "-p", "--publish", "-e", "--env",
                                        "--env-file", "--deny-network", "--profile", "--pull",
                                        NULL};
    for (size_t i = 0; flags[i]; i++)
        if (!strcmp(flags[i], a))
            return 1;
    return 0;
}

typedef struct create_args {
    const char *name, *agent;
    char *paths[MAX_NAMES];
    size_t npaths;
} create_args;

static int parse_create(int argc, char **argv, create_args *c)
{
    memset(c, 0, sizeof *c);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strncmp(a, "--name=", 7)) {
            c->name = a + 7;
        } else if (create_value_flag(a)) {
            if (i + 1 >= argc)
                return fsbx_fail(NULL, "flag needs an argument: %s", a);
            if (!strcmp(a, "--name"))
                c->name = argv[i + 1];
            i++;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet") || !strcmp(a, "--clone") ||
                   !strcmp(a, "--no-share-skills")) {
        } else if (a[0] == '-') {
            return fsbx_fail(NULL, "unknown flag: %s", a);
        } else if (!c->agent) {
            c->agent = a;
        } else if (c->npaths < MAX_NAMES) {
            c->paths[c->npaths++] = argv[i];
        }
    }
    if (!c->agent)
        return fsbx_fail("See 'sbx create --help'.", "\"sbx create\" requires at least 1 argument");
    if (!is_agent(c->agent))
        return fsbx_fail(NULL, "unknown agent \"%s\"", c->agent);
    return 0;
}

/* AGENT-<last component of the primary workspace>, as sbx names them. */
static void default_name(const create_args *c, char *out, size_t cap)
{
    if (c->npaths == 0) {
        snprintf(out, cap, "%s", c->agent);
        return;
    }
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", c->paths[0]);
    char *colon = strstr(path, ":ro");
    if (colon && colon[3] == '\0')
        *colon = '\0';
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        path[--n] = '\0';
    const char *base = strrchr(path, '/');
    snprintf(out, cap, "%s-%s", c->agent, base ? base + 1 : path);
}

/* The workspaces as sbx records them: as given, without the :ro suffix. */
static int add_workspaces(cJSON *sb, const create_args *c)
{
    cJSON *ws = cJSON_AddArrayToObject(sb, "workspaces");
    for (size_t i = 0; ws && i < c->npaths; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s", c->paths[i]);
        size_t n = strlen(path);
        if (n > 3 && !strcmp(path + n - 3, ":ro"))
            path[n - 3] = '\0';
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
            return fsbx_fail(NULL, "workspace %s: not a folder", path);
        cJSON_AddItemToArray(ws, cJSON_CreateString(path));
    }
    return ws ? 0 : fsbx_fail(NULL, "out of memory");
}

static cJSON *new_sandbox(const char *name, const char *agent)
{
    char id[37], now[64];
    fsbx_uuid(id);
    fsbx_now_rfc3339(now, sizeof now);
    cJSON *sb = cJSON_CreateObject();
    cJSON_AddStringToObject(sb, "name", name);
    cJSON_AddStringToObject(sb, "id", id);
    cJSON_AddStringToObject(sb, "agent", agent);
    cJSON_AddStringToObject(sb, "status", "running");
    cJSON_AddStringToObject(sb, "created_at", now);
    cJSON_AddStringToObject(sb, "last_used_at", now);
    return sb;
}

/* Checks and records the sandbox in one store transaction. */
static int record_sandbox(const fsbx *f, const create_args *c, const char *name)
{
    char err[ERR_BUFSZ];
    store s;
    if (store_open(&s, f->state, err) != ERR_OK)
        return fsbx_fail(NULL, "%s", err);
    int rc = 0;
    cJSON *old = store_sandbox(&s, name, 1);
    if (!pol_mode_valid(store_str(store_get(&s, "policy"), "mode")))
        rc = fsbx_fail("Initialize it with:\n  sbx policy init <allow-all|balanced|deny-all>",
                       "global network policy has not been initialized");
    else if (old && !store_bool(old, "hidden"))
        rc = fsbx_fail(NULL, "request failed: 409 Conflict: sandbox \"%s\" already exists", name);
    if (rc == 0 && old) /* a vanished sandbox is gone for good */
        cJSON_Delete(cJSON_DetachItemViaPointer(store_get(&s, "sandboxes"), old));
    cJSON *sb = rc == 0 ? new_sandbox(name, c->agent) : NULL;
    if (rc == 0)
        rc = sb ? add_workspaces(sb, c) : fsbx_fail(NULL, "out of memory");
    if (rc == 0) {
        cJSON_AddItemToArray(store_get(&s, "sandboxes"), sb);
        sb = NULL;
        if (store_save(&s, err) != ERR_OK)
            rc = fsbx_fail(NULL, "%s", err);
    }
    cJSON_Delete(sb);
    store_close(&s);
    return rc;
}

int cmd_create(const fsbx *f, int argc, char **argv)
{
    create_args c;
    int rc = parse_create(argc, argv, &c);
    if (rc)
        return rc;
    char name[FSBX_NAME_MAX + 64], err[ERR_BUFSZ];
    if (c.name)
        snprintf(name, sizeof name, "%s", c.name);
    else
        default_name(&c, name, sizeof name);
    if (!fsbx_valid_name(name))
        return fsbx_fail(NULL, "invalid sandbox name \"%s\": use letters, digits, '-', '.' and '+'",
                         name);
    rc = record_sandbox(f, &c, name);
    if (rc)
        return rc;
    if (fsbx_make_home(f, name, err) != ERR_OK)
        return fsbx_fail(NULL, "%s", err);
    printf("\xe2\x9c\x93 Created sandbox %s\n", name);
    return 0;
}

/* ---- stop, rm, reset ---- */

/* Marks NAME stopped, or removes it (and its scoped rules) when `remove`.
 * 0, or the exit status after sbx's error. */
static int retire(const fsbx *f, const char *name, int remove)
{
    char err[ERR_BUFSZ];
    store s;
    if (store_open(&s, f->state, err) != ERR_OK)
        return fsbx_fail(NULL, "%s", err);
    cJSON *sb = store_sandbox(&s, name, 0);
    if (!sb) {
        store_close(&s);
        return fsbx_no_sandbox(name);
    }
    if (remove) {
        cJSON_Delete(cJSON_DetachItemViaPointer(store_get(&s, "sandboxes"), sb));
        cJSON *rules = cJSON_GetObjectItemCaseSensitive(store_get(&s, "policy"), "rules");
        for (cJSON *r = rules ? rules->child : NULL, *next; r; r = next) {
            next = r->next;
            if (!strcmp(store_str(r, "scope"), name))
                cJSON_Delete(cJSON_DetachItemViaPointer(rules, r));
        }
    } else {
        store_set_str(sb, "status", "stopped");
    }
    err_code rc = store_save(&s, err);
    store_close(&s);
    if (rc != ERR_OK)
        return fsbx_fail(NULL, "%s", err);
    /* Only now end the sessions: their exec sees the sandbox already gone. */
    daemon_end_sessions(f, name, NULL);
    daemon_proxy_close(f, name);
    if (remove)
        fsbx_remove_sandbox_dir(f, name);
    return 0;
}

int cmd_stop(const fsbx *f, int argc, char **argv)
{
    if (argc < 2)
        return fsbx_fail(NULL, "\"sbx stop\" requires at least 1 argument");
    int status = 0;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-')
            return fsbx_fail(NULL, "unknown flag: %s", argv[i]);
        if (retire(f, argv[i], 0) != 0)
            status = 1;
        else
            printf("\xe2\x9c\x93 Stopped sandbox %s\n", argv[i]);
    }
    return status;
}

int cmd_confirm(const char *question)
{
    if (!isatty(0))
        return 0;
    printf("%s [y/N] ", question);
    fflush(stdout);
    char line[32];
    return fgets(line, sizeof line, stdin) && (line[0] == 'y' || line[0] == 'Y');
}

/* Every visible sandbox name, for --all. */
static size_t all_names(const fsbx *f, char names[][FSBX_NAME_MAX], size_t cap)
{
    store s;
    size_t n = 0;
    if (store_open(&s, f->state, NULL) != ERR_OK)
        return 0;
    const cJSON *sb;
    cJSON_ArrayForEach(sb, store_get(&s, "sandboxes")) {
        if (n < cap && !store_bool(sb, "hidden"))
            snprintf(names[n++], FSBX_NAME_MAX, "%s", store_str(sb, "name"));
    }
    store_close(&s);
    return n;
}

int cmd_rm(const fsbx *f, int argc, char **argv)
{
    int force = 0, all = 0, first = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-f") || !strcmp(argv[i], "--force"))
            force = 1;
        else if (!strcmp(argv[i], "--all"))
            all = 1;
        else if (argv[i][0] == '-')
            return fsbx_fail(NULL, "unknown flag: %s", argv[i]);
        else if (!first)
            first = i;
    }
    if (!first && !all)
        return fsbx_fail(NULL, "\"sbx rm\" requires a sandbox name or --all");
    if (!force && !isatty(0))
        return fsbx_fail(NULL, "stdin is not a terminal: pass --force to remove without confirmation");
    if (!force && !cmd_confirm("Remove the sandbox(es) and all their data?")) {
        printf("Aborted.\n");
        return 1;
    }
    char names[MAX_NAMES][FSBX_NAME_MAX];
    size_t n = 0;
    if (all)
        n = all_names(f, names, MAX_NAMES);
    for (int i = first; i > 0 && i < argc && n < MAX_NAMES; i++)
        if (argv[i][0] != '-')
            snprintf(names[n++], FSBX_NAME_MAX, "%s", argv[i]);
    int status = 0;
    for (size_t i = 0; i < n; i++) {
        if (retire(f, names[i], 1) != 0)
            status = 1;
        else
            printf("\xe2\x9c\x93 Removed sandbox %s\n", names[i]);
    }
    return status;
}

int cmd_reset(const fsbx *f, int argc, char **argv)
{
    int force = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-f") || !strcmp(argv[i], "--force"))
            force = 1;
        else if (strcmp(argv[i], "--preserve-secrets") != 0)
            return fsbx_fail(NULL, "unknown flag: %s", argv[i]);
    }
    if (!force && !isatty(0))
        return fsbx_fail(NULL, "stdin is not a terminal: pass --force to reset without confirmation");
    if (!force && !cmd_confirm("Reset Docker Sandboxes? Every sandbox and setting is lost.")) {
        printf("Aborted.\n");
        return 1;
    }
    char err[ERR_BUFSZ], names[MAX_NAMES][FSBX_NAME_MAX];
    size_t n = all_names(f, names, MAX_NAMES);
    int stopped = 0;
    if (daemon_stop(f, NULL, &stopped, err) != ERR_OK)
        return fsbx_fail(NULL, "%s", err);
    store s;
    if (store_open(&s, f->state, err) != ERR_OK || store_wipe(&s, err) != ERR_OK) {
        store_close(&s);
        return fsbx_fail(NULL, "%s", err);
    }
    store_close(&s);
    for (size_t i = 0; i < n; i++)
        fsbx_remove_sandbox_dir(f, names[i]);
    printf("\xe2\x9c\x93 Reset complete!\n\nSummary:\n  \xe2\x80\xa2 Sandboxes stopped: %d\n",
           stopped);
    return 0;
}
