/* sbx: see sbx.h. */
#include "sbx.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "progress.h"
#include "redact.h"

/* ---- small text helpers (no <ctype.h>: its answers depend on the locale
 * and on the sign of char, and the parsers must be exact on any byte) ---- */

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int is_alnum(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static char *dup_bytes(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* ---- sbx_parse_version ---- */

static size_t digits_at(const char *s, size_t len, size_t i)
{
    size_t n = 0;
    while (i + n < len && is_digit(s[i + n]))
        n++;
    return n;
}

/* Length of a version token starting at s[i] == 'v', or 0 when it is not one. */
static size_t version_token_at(const char *s, size_t len, size_t i)
{
    if (i > 0 && (is_alnum(s[i - 1]) || s[i - 1] == '.'))
        return 0;
    size_t j = i + 1;
    for (int part = 0; part < 3; part++) {
        if (part > 0) {
            if (j >= len || s[j] != '.')
                return 0;
            j++;
        }
        size_t n = digits_at(s, len, j);
        if (n == 0)
            return 0;
        j += n;
    }
    if (j + 1 < len && s[j] == '-' && is_alnum(s[j + 1])) {
        j++;
        while (j < len && (is_alnum(s[j]) || s[j] == '.' || s[j] == '-'))
            j++;
        while (s[j - 1] == '.' || s[j - 1] == '-') /* a sentence's full stop */
            j--;
    }
    if (j < len && (is_alnum(s[j]) || s[j] == '_'))
        return 0;
    return j - i;
}

err_code sbx_parse_version(const char *text, size_t len, char out[SBX_VERSION_SZ], char *err)
{
    out[0] = '\0';
    for (size_t i = 0; text && i < len; i++) {
        if (text[i] != 'v')
            continue;
        size_t n = version_token_at(text, len, i);
        if (n == 0)
            continue;
        if (n >= SBX_VERSION_SZ)
            return err_set(err, ERR_CORRUPT, "sbx version token is too long");
        memcpy(out, text + i, n);
        out[n] = '\0';
        return ERR_OK;
    }
    return err_set(err, ERR_CORRUPT, "no vX.Y.Z version in the sbx version output");
}

/* ---- sbx_parse_error ---- */

/* The error prefixes sbx has used across versions (sbx-cli.md section 2). */
static const char *const error_prefixes[] = {"ERROR: ", "Error: ", "error: ", NULL};

static int line_is_error(const char *line, size_t n, size_t *skip)
{
    static const char tag[] = "[sbx] ";
    *skip = 0;
    if (n >= sizeof tag - 1 && memcmp(line, tag, sizeof tag - 1) == 0)
        *skip = sizeof tag - 1;
    for (size_t p = 0; error_prefixes[p]; p++) {
        size_t plen = strlen(error_prefixes[p]);
        if (n - *skip >= plen && memcmp(line + *skip, error_prefixes[p], plen) == 0)
            return 1;
    }
    return 0;
}

int sbx_parse_error(const char *text, size_t len, char *out, size_t cap)
{
    if (cap > 0)
        out[0] = '\0';
    for (size_t i = 0; text && i < len;) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
        size_t skip;
        if (line_is_error(text + i, n, &skip)) {
            size_t keep = n - skip;
            while (keep > 0 && text[i + skip + keep - 1] == '\r')
                keep--;
            /* Redact the whole line before cutting it to size: a cut first
             * could leave half a secret that no longer matches. */
            char *line = dup_bytes(text + i + skip, keep);
            if (line && cap > 0)
                redact_into(line, out, cap);
            free(line);
            return 1;
        }
        i += n + 1;
    }
    return 0;
}

/* ---- sbx_parse_ls ---- */

void sbx_sandbox_free(sbx_sandbox *sb)
{
    if (!sb)
        return;
    free(sb->name);
    free(sb->id);
    free(sb->agent);
    free(sb->status);
    for (size_t i = 0; i < sb->n_workspaces; i++)
        free(sb->workspaces[i]);
    free(sb->workspaces);
    memset(sb, 0, sizeof *sb);
}

void sbx_list_free(sbx_list *list)
{
    if (!list)
        return;
    for (size_t i = 0; i < list->count; i++)
        sbx_sandbox_free(&list->items[i]);
    free(list->items);
    list->items = NULL;
    list->count = 0;
}

const sbx_sandbox *sbx_list_find(const sbx_list *list, const char *name)
{
    for (size_t i = 0; list && name && i < list->count; i++)
        if (strcmp(list->items[i].name, name) == 0)
            return &list->items[i];
    return NULL;
}

int sbx_is_stopped(const sbx_sandbox *sb)
{
    return sb && sb->status && strcmp(sb->status, "stopped") == 0;
}

/* A string field's value copied, or a copy of `dflt` (NULL stays NULL). A
 * field of another type counts as missing. Sets *nomem when a copy fails. */
static char *field_str(const cJSON *obj, const char *key, const char *dflt, int *nomem)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(obj, key);
    const char *v = cJSON_IsString(f) && f->valuestring ? f->valuestring : dflt;
    if (!v)
        return NULL;
    char *copy = strdup(v);
    if (!copy)
        *nomem = 1;
    return copy;
}

static int copy_workspaces(const cJSON *obj, sbx_sandbox *sb)
{
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(obj, "workspaces");
    int n = cJSON_IsArray(ws) ? cJSON_GetArraySize(ws) : 0;
    if (n <= 0)
        return 0;
    sb->workspaces = calloc((size_t)n, sizeof *sb->workspaces);
    if (!sb->workspaces)
        return -1;
    const cJSON *w;
    cJSON_ArrayForEach(w, ws) {
        if (!cJSON_IsString(w) || !w->valuestring)
            continue;
        sb->workspaces[sb->n_workspaces] = strdup(w->valuestring);
        if (!sb->workspaces[sb->n_workspaces])
            return -1;
        sb->n_workspaces++;
    }
    return 0;
}

static err_code sandbox_from_json(const cJSON *obj, size_t index, sbx_sandbox *sb, char *err)
{
    memset(sb, 0, sizeof *sb);
    if (!cJSON_IsObject(obj))
        return err_set(err, ERR_CORRUPT, "sbx ls: sandbox #%zu is not an object", index);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(obj, "name");
    if (!cJSON_IsString(name) || !name->valuestring || !name->valuestring[0])
        return err_set(err, ERR_CORRUPT, "sbx ls: sandbox #%zu has no name", index);
    int nomem = 0;
    sb->name = field_str(obj, "name", NULL, &nomem);
    sb->id = field_str(obj, "id", NULL, &nomem);
    sb->agent = field_str(obj, "agent", "", &nomem);
    sb->status = field_str(obj, "status", "", &nomem);
    if (nomem || copy_workspaces(obj, sb) != 0)
        return err_set(err, ERR_NOMEM, "out of memory reading sbx ls");
    return ERR_OK;
}

/* Offset of the first line that starts with '{', or len when none does. */
static size_t json_start(const char *text, size_t len)
{
    size_t i = 0;
    while (i < len) {
        if (text[i] == '{')
            return i;
        const char *nl = memchr(text + i, '\n', len - i);
        if (!nl)
            break;
        i = (size_t)(nl - text) + 1;
    }
    return len;
}

static err_code list_from_json(const cJSON *root, sbx_list *out, char *err)
{
    if (!cJSON_IsObject(root))
        return err_set(err, ERR_CORRUPT, "sbx ls: the JSON is not an object");
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "sandboxes");
    if (!arr || cJSON_IsNull(arr))
        return ERR_OK;
    if (!cJSON_IsArray(arr))
        return err_set(err, ERR_CORRUPT, "sbx ls: \"sandboxes\" is not a list");
    int n = cJSON_GetArraySize(arr);
    if (n <= 0)
        return ERR_OK;
    out->items = calloc((size_t)n, sizeof *out->items);
    if (!out->items)
        return err_set(err, ERR_NOMEM, "out of memory reading sbx ls");
    const cJSON *item;
    cJSON_ArrayForEach(item, arr) {
        err_code rc = sandbox_from_json(item, out->count, &out->items[out->count], err);
        if (rc != ERR_OK) {
            sbx_sandbox_free(&out->items[out->count]);
            return rc;
        }
        out->count++;
    }
    return ERR_OK;
}

err_code sbx_parse_ls(const char *text, size_t len, sbx_list *out, char *err)
{
    memset(out, 0, sizeof *out);
    size_t start = text ? json_start(text, len) : len;
    if (!text || start >= len)
        return err_set(err, ERR_CORRUPT, "sbx ls printed no JSON object");
    /* cJSON gets its own NUL-terminated copy: the input may be any bytes. */
    char *json = dup_bytes(text + start, len - start);
    if (!json)
        return err_set(err, ERR_NOMEM, "out of memory reading sbx ls");
    cJSON *root = cJSON_ParseWithOpts(json, NULL, 0);
    free(json);
    if (!root)
        return err_set(err, ERR_CORRUPT, "sbx ls printed invalid JSON");
    err_code rc = list_from_json(root, out, err);
    cJSON_Delete(root);
    if (rc != ERR_OK)
        sbx_list_free(out);
    return rc;
}

/* ---- running sbx ---- */

err_code sbx_init(sbx_ctx *ctx, const char *bin, int timeout_ms, int slow_timeout_ms, char *err)
{
    memset(ctx, 0, sizeof *ctx);
    const char *b = bin && *bin ? bin : "sbx";
    if (strlen(b) >= sizeof ctx->bin)
        return err_set(err, ERR_USAGE, "sbx program path is too long");
    memcpy(ctx->bin, b, strlen(b) + 1);
    ctx->timeout_ms = timeout_ms > 0 ? timeout_ms : SBX_TIMEOUT_MS;
    ctx->slow_timeout_ms = slow_timeout_ms > 0 ? slow_timeout_ms : SBX_SLOW_TIMEOUT_MS;
    return ERR_OK;
}

/* Turns a finished run into the call's result: ERR_OK on exit 0, else
 * ERR_PROCESS with sbx's own words. `what` names the call ("sbx ls"). */
static err_code judge(const proc_result *res, const char *what, char *err)
{
    if (res->exited && res->status == 0)
        return ERR_OK;
    char why[ERR_BUFSZ / 2];
    if (!sbx_parse_error(res->err.data, res->err.len, why, sizeof why))
        proc_stream_last_line(&res->err, why, sizeof why);
    if (!res->exited)
        return err_set(err, ERR_PROCESS, "%s was killed by signal %d%s%s", what, res->signal,
                       why[0] ? ": " : "", why);
    return err_set(err, ERR_PROCESS, "%s exited %d%s%s", what, res->status, why[0] ? ": " : "",
                   why);
}

static void tick_progress(void *pg)
{
    progress_tick(pg);
}

/* Runs ctx->bin with args (NULL-terminated, without the program) under
 * timeout_ms. *res is always initialised. Returns proc_run's error, told
 * in sbx's terms, or ERR_OK when sbx ran (judge the result separately). */
static err_code run_sbx(const sbx_ctx *ctx, const char *const *args, int timeout_ms,
                        proc_result *res, const char *what, char *err)
{
    const char *argv[SBX_ARGV_MAX + 2];
    size_t n = 0;
    argv[n++] = ctx->bin;
    for (size_t i = 0; args[i]; i++) {
        if (n == SBX_ARGV_MAX + 1) {
            memset(res, 0, sizeof *res);
            return err_set(err, ERR_USAGE, "%s: too many arguments", what);
        }
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    proc_opts opts = {.timeout_ms = timeout_ms, .env = ctx->env};
    progress pg;
    if (ctx->progress) {
        progress_begin(&pg, ctx->progress, what, timeout_ms);
        opts.on_tick = tick_progress;
        opts.tick_ud = &pg;
    }
    err_code rc = proc_run(argv, &opts, res, err);
    if (ctx->progress)
        progress_end(&pg, rc == ERR_OK ? "done" : "failed");
    if (rc == ERR_TIMEOUT)
        return err_set(err, ERR_TIMEOUT,
                       "%s did not answer within %d s and was killed (a wedged sbx daemon does "
                       "this; try `sbx daemon status`)",
                       what, (timeout_ms + 999) / 1000);
    if (rc == ERR_NOTFOUND)
        return err_wrap(err, rc, "sbx is not installed or SBX_BIN is wrong");
    if (rc != ERR_OK)
        return err_wrap(err, rc, "running %s", what);
    return ERR_OK;
}

/* run_sbx + judge, for calls whose output does not matter. */
static err_code call_sbx(const sbx_ctx *ctx, const char *const *args, int timeout_ms,
                         const char *what, char *err)
{
    proc_result res;
    err_code rc = run_sbx(ctx, args, timeout_ms, &res, what, err);
    if (rc == ERR_OK)
        rc = judge(&res, what, err);
    proc_result_free(&res);
    return rc;
}

err_code sbx_version(const sbx_ctx *ctx, char out[SBX_VERSION_SZ], char *err)
{
    static const char *const args[] = {"version", NULL};
    out[0] = '\0';
    proc_result res;
    err_code rc = run_sbx(ctx, args, ctx->timeout_ms, &res, "sbx version", err);
    if (rc == ERR_OK)
        rc = judge(&res, "sbx version", err);
    if (rc == ERR_OK)
        rc = sbx_parse_version(res.out.data, res.out.len, out, err);
    proc_result_free(&res);
    return rc;
}

err_code sbx_ls(const sbx_ctx *ctx, sbx_list *out, char *err)
{
    static const char *const args[] = {"ls", "--json", NULL};
    memset(out, 0, sizeof *out);
    proc_result res;
    err_code rc = run_sbx(ctx, args, ctx->timeout_ms, &res, "sbx ls", err);
    if (rc == ERR_OK)
        rc = judge(&res, "sbx ls", err);
    if (rc == ERR_OK)
        rc = sbx_parse_ls(res.out.data, res.out.len, out, err);
    proc_result_free(&res);
    return rc;
}

static err_code sandbox_copy(sbx_sandbox *dst, const sbx_sandbox *src)
{
    memset(dst, 0, sizeof *dst);
    int bad = 0;
    dst->name = strdup(src->name);
    dst->id = src->id ? strdup(src->id) : NULL;
    dst->agent = strdup(src->agent);
    dst->status = strdup(src->status);
    bad = !dst->name || (src->id && !dst->id) || !dst->agent || !dst->status;
    if (!bad && src->n_workspaces > 0) {
        dst->workspaces = calloc(src->n_workspaces, sizeof *dst->workspaces);
        bad = !dst->workspaces;
        for (size_t i = 0; !bad && i < src->n_workspaces; i++) {
            dst->workspaces[i] = strdup(src->workspaces[i]);
            bad = !dst->workspaces[i];
            dst->n_workspaces += !bad;
        }
    }
    if (bad) {
        sbx_sandbox_free(dst);
        return ERR_NOMEM;
    }
    return ERR_OK;
}

err_code sbx_find(const sbx_ctx *ctx, const char *name, sbx_sandbox *out, char *err)
{
    memset(out, 0, sizeof *out);
    if (!name || !*name)
        return err_set(err, ERR_USAGE, "no sandbox name to look for");
    sbx_list list;
    err_code rc = sbx_ls(ctx, &list, err);
    if (rc != ERR_OK)
        return rc;
    const sbx_sandbox *sb = sbx_list_find(&list, name);
    if (!sb)
        rc = err_set(err, ERR_NOTFOUND, "sbx ls does not list a sandbox named %s", name);
    else if (sandbox_copy(out, sb) != ERR_OK)
        rc = err_set(err, ERR_NOMEM, "out of memory copying sandbox %s", name);
    sbx_list_free(&list);
    return rc;
}

err_code sbx_create(const sbx_ctx *ctx, const char *name, const char *workspace, char *err)
{
    if (!name || !*name || !workspace || !*workspace)
        return err_set(err, ERR_USAGE, "sbx create needs a name and a workspace");
    const char *const args[] = {"create", "--name", name, "shell", workspace, NULL};
    return call_sbx(ctx, args, ctx->slow_timeout_ms, "sbx create", err);
}

/* "h1,h2,..." from a NULL-terminated list; malloc'd. */
static err_code join_resources(const char *const *hosts, char **out, char *err)
{
    size_t total = 0, n = 0;
    for (; hosts && hosts[n]; n++) {
        if (!hosts[n][0] || strpbrk(hosts[n], ", \t\r\n"))
            return err_set(err, ERR_USAGE, "network resource #%zu is empty or holds a comma or blank",
                           n);
        total += strlen(hosts[n]) + 1;
    }
    if (n == 0)
        return err_set(err, ERR_USAGE, "no network resources to allow");
    char *s = malloc(total);
    if (!s)
        return err_set(err, ERR_NOMEM, "out of memory");
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(hosts[i]);
        memcpy(s + used, hosts[i], l);
        used += l;
        s[used++] = i + 1 < n ? ',' : '\0';
    }
    *out = s;
    return ERR_OK;
}

err_code sbx_policy_allow(const sbx_ctx *ctx, const char *name, const char *const *hosts,
                          char *err)
{
    if (!name || !*name)
        return err_set(err, ERR_USAGE, "sbx policy allow needs a sandbox name");
    char *joined = NULL;
    err_code rc = join_resources(hosts, &joined, err);
    if (rc != ERR_OK)
        return rc;
    const char *const args[] = {"policy", "allow", "network", "--sandbox", name, joined, NULL};
    rc = call_sbx(ctx, args, ctx->timeout_ms, "sbx policy allow network", err);
    free(joined);
    return rc;
}

static err_code argv_push(sbx_argv *a, const char *s, char *err)
{
    if (a->n == SBX_ARGV_MAX)
        return err_set(err, ERR_USAGE, "sbx exec command line is longer than %d arguments",
                       SBX_ARGV_MAX);
    a->v[a->n++] = s;
    a->v[a->n] = NULL;
    return ERR_OK;
}

err_code sbx_exec_argv(const sbx_ctx *ctx, const sbx_exec_spec *spec, sbx_argv *out, char *err)
{
    out->n = 0;
    out->v[0] = NULL;
    if (!spec || !spec->sandbox || !*spec->sandbox || !spec->cmd || !spec->cmd[0] ||
        !spec->cmd[0][0])
        return err_set(err, ERR_USAGE, "sbx exec needs a sandbox and a command");
    err_code rc = argv_push(out, ctx->bin, err);
    if (rc == ERR_OK)
        rc = argv_push(out, "exec", err);
    for (size_t i = 0; rc == ERR_OK && spec->env && spec->env[i]; i++) {
        const char *eq = strchr(spec->env[i], '=');
        if (!eq || eq == spec->env[i])
            return err_set(err, ERR_USAGE, "sbx exec variable #%zu is not NAME=value", i);
        rc = argv_push(out, "-e", err);
        if (rc == ERR_OK)
            rc = argv_push(out, spec->env[i], err);
    }
    if (rc == ERR_OK && spec->env_file) {
        rc = argv_push(out, "--env-file", err);
        if (rc == ERR_OK)
            rc = argv_push(out, spec->env_file, err);
    }
    if (rc == ERR_OK && spec->workdir) {
        rc = argv_push(out, "--workdir", err);
        if (rc == ERR_OK)
            rc = argv_push(out, spec->workdir, err);
    }
    if (rc == ERR_OK)
        rc = argv_push(out, spec->sandbox, err);
    for (size_t i = 0; rc == ERR_OK && spec->cmd[i]; i++)
        rc = argv_push(out, spec->cmd[i], err);
    return rc;
}

err_code sbx_exec(const sbx_ctx *ctx, const sbx_exec_spec *spec, int timeout_ms,
                  proc_result *res, char *err)
{
    memset(res, 0, sizeof *res);
    sbx_argv a;
    err_code rc = sbx_exec_argv(ctx, spec, &a, err);
    if (rc != ERR_OK)
        return rc;
    char raw[160], what[160];
    snprintf(raw, sizeof raw, "sbx exec %s %s", spec->sandbox, spec->cmd[0]);
    redact_into(raw, what, sizeof what);
    rc = run_sbx(ctx, a.v + 1, timeout_ms > 0 ? timeout_ms : ctx->timeout_ms, res, what, err);
    if (rc != ERR_OK)
        return rc;
    if (!res->exited)
        return judge(res, what, err);
    char why[ERR_BUFSZ / 2];
    if (res->status == 1 && sbx_parse_error(res->err.data, res->err.len, why, sizeof why))
        return err_set(err, ERR_PROCESS, "%s: %s", what, why);
    return ERR_OK;
}

err_code sbx_daemon_stop(const sbx_ctx *ctx, char *err)
{
    static const char *const args[] = {"daemon", "stop", NULL};
    return call_sbx(ctx, args, ctx->timeout_ms, "sbx daemon stop", err);
}

err_code sbx_daemon_start(const sbx_ctx *ctx, char *err)
{
    static const char *const args[] = {"daemon", "start", "-d", NULL};
    return call_sbx(ctx, args, ctx->slow_timeout_ms, "sbx daemon start -d", err);
}

err_code sbx_rm(const sbx_ctx *ctx, const char *name, char *err)
{
    if (!name || !*name)
        return err_set(err, ERR_USAGE, "sbx rm needs a sandbox name");
    const char *const args[] = {"rm", "--force", name, NULL};
    return call_sbx(ctx, args, ctx->timeout_ms, "sbx rm --force", err);
}

err_code sbx_policy_log(const sbx_ctx *ctx, const char *name, char **text, char *err)
{
    *text = NULL;
    const char *const args[] = {"policy", "log", name, NULL}; /* NULL name ends it early */
    proc_result res;
    err_code rc = run_sbx(ctx, args, ctx->timeout_ms, &res, "sbx policy log", err);
    if (rc == ERR_OK)
        rc = judge(&res, "sbx policy log", err);
    if (rc == ERR_OK) {
        *text = redact_str(res.out.data);
        if (!*text)
            rc = err_set(err, ERR_NOMEM, "out of memory");
    }
    proc_result_free(&res);
    return rc;
}
