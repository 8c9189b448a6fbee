/* cmd_policy: see cmd_policy.h. */
#include "cmd_policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd_sandbox.h"
#include "daemon.h"
#include "policy.h"
#include "store.h"
#include "table.h"

#define MAX_RESOURCES 64

/* ---- init, reset ---- */

static int policy_init(const fsbx *f, int argc, char **argv)
{
    if (argc != 2 || !pol_mode_valid(argv[1]))
        return fsbx_fail(NULL, "usage: sbx policy init <allow-all|balanced|deny-all>");
    char err[ERR_BUFSZ];
    store s;
    if (store_open(&s, f->state, err) != ERR_OK)
        return fsbx_fail(NULL, "%s", err);
    cJSON *policy = store_get(&s, "policy");
    int rc = 0;
    if (pol_mode_valid(store_str(policy, "mode")))
        rc = fsbx_fail("Reset it first with:\n  sbx policy reset",
                       "global network policy is already initialized (%s)",
                       store_str(policy, "mode"));
    else if (store_set_str(policy, "mode", argv[1]) || store_save(&s, err) != ERR_OK)
        rc = fsbx_fail(NULL, "cannot save the policy: %s", err);
    store_close(&s);
    if (rc == 0)
        printf("\xe2\x9c\x93 Global network policy initialized: %s\n", argv[1]);
    return rc;
}

static int policy_reset(const fsbx *f, int argc, char **argv)
{
    int force = argc > 1 && (!strcmp(argv[1], "-f") || !strcmp(argv[1], "--force"));
    if (!force && !isatty(0))
        return fsbx_fail(NULL, "stdin is not a terminal: pass --force to reset without confirmation");
    if (!force && !cmd_confirm("Delete every network policy rule and stop the daemon?")) {
        printf("Aborted.\n");
        return 1;
    }
    char err[ERR_BUFSZ];
    store s;
    if (store_open(&s, f->state, err) != ERR_OK)
        return fsbx_fail(NULL, "%s", err);
    cJSON *policy = store_get(&s, "policy");
    cJSON_DeleteItemFromObjectCaseSensitive(policy, "mode");
    cJSON_ReplaceItemInObjectCaseSensitive(policy, "rules", cJSON_CreateArray());
    err_code rc = store_save(&s, err);
    store_close(&s);
    if (rc == ERR_OK)
        rc = daemon_stop(f, NULL, NULL, err);
    if (rc != ERR_OK)
        return fsbx_fail(NULL, "%s", err);
    printf("\xe2\x9c\x93 Network policy reset; the daemon was stopped\n");
    return 0;
}

/* ---- allow, deny, rm ---- */

typedef struct rule_args {
    const char *sandbox;  /* NULL = global */
    const char *resource; /* the comma list, or rm's --resource */
    const char *id;       /* rm --id */
    int json;
} rule_args;

/* `network [--sandbox N] [-g] [--json] [--resource R] [--id I] [POSITIONAL]` */
static int parse_rule_args(int argc, char **argv, rule_args *r)
{
    memset(r, 0, sizeof *r);
    if (argc < 2 || strcmp(argv[1], "network") != 0)
        return fsbx_fail(NULL, "unknown policy type \"%s\": only network is modelled",
                         argc > 1 ? argv[1] : "");
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = !strcmp(a, "--sandbox")    ? &r->sandbox
                            : !strcmp(a, "--resource") ? &r->resource
                            : !strcmp(a, "--id")       ? &r->id
                                                       : NULL;
        if (slot) {
            if (i + 1 >= argc)
                return fsbx_fail(NULL, "flag needs an argument: %s", a);
            *slot = argv[++i];
        } else if (!strncmp(a, "--sandbox=", 10)) {
            r->sandbox = a + 10;
        } else if (!strcmp(a, "--json")) {
            r->json = 1;
        } else if (!strcmp(a, "-g") || !strcmp(a, "--global") || !strcmp(a, "--verbose")) {
        } else if (a[0] == '-') {
            return fsbx_fail(NULL, "unknown flag: %s", a);
        } else if (!r->resource) {
            r->resource = a;
        } else {
            return fsbx_fail(NULL, "too many arguments: %s", a);
        }
    }
    return 0;
}

/* Splits "a, b,c" into trimmed resources in buf. Returns the count, or -1
 * after printing sbx's error for an invalid one. */
static int split_resources(const char *list, char *buf, size_t cap, char **out)
{
    snprintf(buf, cap, "%s", list);
    int n = 0;
    for (char *tok = buf, *next; tok; tok = next) {
        next = strchr(tok, ',');
        if (next)
            *next++ = '\0';
        while (*tok == ' ')
            tok++;
        size_t len = strlen(tok);
        while (len > 0 && tok[len - 1] == ' ')
            tok[--len] = '\0';
        if (!pol_resource_valid(tok) || n == MAX_RESOURCES) {
            fsbx_fail(NULL, "invalid network resource \"%s\"", tok);
            return -1;
        }
        out[n++] = tok;
    }
    return n;
}

static cJSON *find_rule(cJSON *rules, const char *scope, const char *decision, const char *res)
{
    cJSON *r;
    cJSON_ArrayForEach(r, rules) {
        if (!strcmp(store_str(r, "scope"), scope) && !strcmp(store_str(r, "resource"), res) &&
            (!decision || !strcmp(store_str(r, "decision"), decision)))
            return r;
    }
    return NULL;
}

static int add_rule(cJSON *rules, const char *scope, const char *decision, const char *res)
{
    if (find_rule(rules, scope, decision, res))
        return 0;
    if (!strcmp(decision, "deny")) {
        cJSON *allow = find_rule(rules, scope, "allow", res);
        if (allow)
            return fsbx_fail(NULL,
                             "deny network rule: deny: \"%s\" conflicts with existing allow rule "
                             "\"%s\"",
                             res, store_str(allow, "id"));
    }
    char id[37];
    fsbx_uuid(id);
    cJSON *r = cJSON_CreateObject();
    if (!r || store_set_str(r, "id", id) || store_set_str(r, "scope", scope) ||
        store_set_str(r, "decision", decision) || store_set_str(r, "resource", res) ||
        !cJSON_AddItemToArray(rules, r)) {
        cJSON_Delete(r);
        return fsbx_fail(NULL, "out of memory");
    }
    return 0;
}

static int policy_rule(const fsbx *f, const char *decision, int argc, char **argv)
{
    rule_args a;
    int rc = parse_rule_args(argc, argv, &a);
    if (rc)
        return rc;
    if (!a.resource)
        return fsbx_fail(NULL, "\"sbx policy %s network\" requires RESOURCES", decision);
    char buf[4096], err[ERR_BUFSZ], *res[MAX_RESOURCES];
    int n = split_resources(a.resource, buf, sizeof buf, res);
    if (n < 0)
        return 1;
    store s;
    if (store_open(&s, f->state, err) != ERR_OK)
        return fsbx_fail(NULL, "%s", err);
    if (a.sandbox && !store_sandbox(&s, a.sandbox, 0)) {
        store_close(&s);
        return fsbx_no_sandbox(a.sandbox);
    }
    cJSON *rules = cJSON_GetObjectItemCaseSensitive(store_get(&s, "policy"), "rules");
    for (int i = 0; rc == 0 && i < n; i++)
        rc = add_rule(rules, a.sandbox ? a.sandbox : "", decision, res[i]);
    if (rc == 0 && store_save(&s, err) != ERR_OK)
        rc = fsbx_fail(NULL, "%s", err);
    store_close(&s);
    if (rc == 0)
        printf("\xe2\x9c\x93 Added %s network rule for \"%s\" (%s)\n", decision, a.resource,
               a.sandbox ? a.sandbox : "all sandboxes");
    return rc;
}

static int policy_rm(const fsbx *f, int argc, char **argv)
{
    rule_args a;
    int rc = parse_rule_args(argc, argv, &a);
    if (rc)
        return rc;
    if (!a.resource && !a.id)
        return fsbx_fail(NULL, "\"sbx policy rm network\" needs --resource or --id");
    char err[ERR_BUFSZ];
    store s;
    if (store_open(&s, f->state, err) != ERR_OK)
        return fsbx_fail(NULL, "%s", err);
    cJSON *rules = cJSON_GetObjectItemCaseSensitive(store_get(&s, "policy"), "rules");
    int removed = 0;
    for (cJSON *r = rules ? rules->child : NULL, *next; r; r = next) {
        next = r->next;
        int hit = a.id ? !strcmp(store_str(r, "id"), a.id)
                       : !strcmp(store_str(r, "resource"), a.resource) &&
                             !strcmp(store_str(r, "scope"), a.sandbox ? a.sandbox : "");
        if (hit) {
            cJSON_Delete(cJSON_DetachItemViaPointer(rules, r));
            removed++;
        }
    }
    if (!removed)
        rc = fsbx_fail(NULL, "no matching network rule");
    else if (store_save(&s, err) != ERR_OK)
        rc = fsbx_fail(NULL, "%s", err);
    store_close(&s);
    if (rc == 0)
        printf("\xe2\x9c\x93 Removed %d network rule(s)\n", removed);
    return rc;
}

/* ---- ls ---- */

static void count_rules(const cJSON *rules, const char *scope, int *allow, int *deny)
{
    *allow = *deny = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, rules) {
        if (strcmp(store_str(r, "scope"), scope) != 0)
            continue;
        if (!strcmp(store_str(r, "decision"), "allow"))
            (*allow)++;
        else
            (*deny)++;
    }
}

static int policy_ls(const fsbx *f, int argc, char **argv)
{
    int json = argc > 1 && !strcmp(argv[argc - 1], "--json");
    char err[ERR_BUFSZ];
    store s;
    if (store_open(&s, f->state, err) != ERR_OK)
        return fsbx_fail(NULL, "%s", err);
    const cJSON *policy = store_get(&s, "policy");
    const cJSON *rules = cJSON_GetObjectItemCaseSensitive(policy, "rules");
    const char *mode = store_str(policy, "mode");
    if (json) {
        fsbx_print_json(stdout, policy);
        store_close(&s);
        return 0;
    }
    static const char *const header[] = {"POLICY", "SOURCE", "APPLIES TO", "SUMMARY"};
    table t;
    table_init(&t, 4, header);
    char summary[160];
    int allow, deny;
    count_rules(rules, "", &allow, &deny);
    snprintf(summary, sizeof summary, "network: %d allow, %d deny (default: %s)",
             allow + pol_builtin_count(mode), deny, mode[0] ? mode : "not initialized");
    const char *row[] = {"local-policy", "local", "all", summary};
    table_add(&t, row);
    const cJSON *sb;
    cJSON_ArrayForEach(sb, store_get(&s, "sandboxes")) {
        count_rules(rules, store_str(sb, "name"), &allow, &deny);
        if (allow + deny == 0)
            continue;
        snprintf(summary, sizeof summary, "network: %d allow, %d deny", allow, deny);
        const char *srow[] = {"local-policy", "local", store_str(sb, "name"), summary};
        table_add(&t, srow);
    }
    table_print(&t, stdout);
    table_free(&t);
    store_close(&s);
    return 0;
}

/* ---- log ---- */

static void last_seen_text(double when, char *buf, size_t cap)
{
    time_t t = (time_t)when;
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, cap, "%H:%M:%S %d-%b", &tm);
}

static void print_section(const char *title, const cJSON *log, const char *sandbox, int blocked,
                          long limit)
{
    static const char *const header[] = {"SANDBOX", "TYPE", "HOST", "PROXY",
                                         "RULE", "REASON", "LAST SEEN", "COUNT"};
    table t;
    if (table_init(&t, 8, header) != 0)
        return;
    long shown = 0;
    const cJSON *row;
    cJSON_ArrayForEach(row, log) {
        if (store_bool(row, "blocked") != blocked || (limit > 0 && shown >= limit) ||
            (sandbox && strcmp(store_str(row, "sandbox"), sandbox) != 0))
            continue;
        char seen[64], count[32];
        last_seen_text(store_num(row, "last_seen"), seen, sizeof seen);
        snprintf(count, sizeof count, "%.0f", store_num(row, "count"));
        const char *cells[] = {store_str(row, "sandbox"), "network", store_str(row, "host"),
                               store_str(row, "proxy"), store_str(row, "rule"),
                               store_str(row, "reason"), seen, count};
        table_add(&t, cells);
        shown++;
    }
    printf("%s\n", title);
    table_print(&t, stdout);
    table_free(&t);
}

static cJSON *log_json(const cJSON *log, const char *sandbox, int blocked)
{
    cJSON *out = cJSON_CreateArray();
    const cJSON *row;
    cJSON_ArrayForEach(row, log) {
        if (store_bool(row, "blocked") != blocked ||
            (sandbox && strcmp(store_str(row, "sandbox"), sandbox) != 0))
            continue;
        cJSON *copy = cJSON_Duplicate(row, 1);
        cJSON_AddStringToObject(copy, "type", "network");
        cJSON_AddItemToArray(out, copy);
    }
    return out;
}

static int policy_log(const fsbx *f, int argc, char **argv)
{
    const char *sandbox = NULL;
    int json = 0;
    long limit = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--limit") && i + 1 < argc)
            limit = strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet"))
            continue;
        else if (!strcmp(argv[i], "--type") && i + 1 < argc)
            i++;
        else if (argv[i][0] == '-')
            return fsbx_fail(NULL, "unknown flag: %s", argv[i]);
        else
            sandbox = argv[i];
    }
    char err[ERR_BUFSZ];
    store s;
    if (store_open(&s, f->state, err) != ERR_OK)
        return fsbx_fail(NULL, "%s", err);
    const cJSON *log = store_get(&s, "log");
    if (json) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddItemToObject(root, "blocked", log_json(log, sandbox, 1));
        cJSON_AddItemToObject(root, "allowed", log_json(log, sandbox, 0));
        fsbx_print_json(stdout, root);
        cJSON_Delete(root);
    } else {
        print_section("Blocked requests:", log, sandbox, 1, limit);
        printf("\n");
        print_section("Allowed requests:", log, sandbox, 0, limit);
    }
    store_close(&s);
    return 0;
}

/* ---- check ---- */

/* host and port of "host", "host:port" or "scheme://host[:port][/path]". */
static int parse_target(const char *target, char *host, size_t cap, int *port)
{
    const char *p = strstr(target, "://");
    *port = p && !strncmp(target, "http://", 7) ? 80 : 443;
    p = p ? p + 3 : target;
    size_t n = strcspn(p, "/");
    char hp[512];
    if (n == 0 || n >= sizeof hp)
        return -1;
    memcpy(hp, p, n);
    hp[n] = '\0';
    char *colon = strrchr(hp, ':');
    if (colon) {
        *colon = '\0';
        *port = atoi(colon + 1);
    }
    if (!hp[0] || *port <= 0 || *port > 65535 || strlen(hp) >= cap)
        return -1;
    memcpy(host, hp, strlen(hp) + 1);
    return 0;
}

static int policy_check(const fsbx *f, int argc, char **argv)
{
    rule_args a;
    int rc = parse_rule_args(argc, argv, &a);
    if (rc)
        return rc;
    char host[256], err[ERR_BUFSZ];
    int port;
    if (!a.resource || parse_target(a.resource, host, sizeof host, &port) != 0)
        return fsbx_fail(NULL, "\"sbx policy check network\" needs a TARGET (host[:port] or URL)");
    store s;
    if (store_open(&s, f->state, err) != ERR_OK)
        return fsbx_fail(NULL, "%s", err);
    pol_verdict v;
    pol_decide(store_get(&s, "policy"), a.sandbox, host, port, &v);
    store_close(&s);
    if (a.json)
        printf("{\n  \"allowed\": %s,\n  \"host\": \"%s\",\n  \"port\": %d\n}\n",
               v.allowed ? "true" : "false", host, port);
    else
        printf("%s: %s:%d: %s\n", v.allowed ? "Allowed" : "Denied", host, port, v.detail);
    return v.allowed ? 0 : 1;
}

int cmd_policy(const fsbx *f, int argc, char **argv)
{
    const char *sub = argc > 1 ? argv[1] : "";
    if (!strcmp(sub, "init"))
        return policy_init(f, argc - 1, argv + 1);
    if (!strcmp(sub, "allow") || !strcmp(sub, "deny"))
        return policy_rule(f, sub, argc - 1, argv + 1);
    if (!strcmp(sub, "rm"))
        return policy_rm(f, argc - 1, argv + 1);
    if (!strcmp(sub, "ls"))
        return policy_ls(f, argc - 1, argv + 1);
    if (!strcmp(sub, "log"))
        return policy_log(f, argc - 1, argv + 1);
    if (!strcmp(sub, "check"))
        return policy_check(f, argc - 1, argv + 1);
    if (!strcmp(sub, "reset"))
        return policy_reset(f, argc - 1, argv + 1);
    return fsbx_fail("See 'sbx policy --help'.", "unknown command \"%s\" for \"sbx policy\"", sub);
}
