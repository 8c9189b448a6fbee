#include "tk_sbx.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tk.h"

#define MAX_ARGS 64

static char *fake_bin_dir(void)
{
    const char *dir = getenv("SMOKE_FAKE_SBX_BIN");
    char *copy = strdup(dir && *dir ? dir : SMOKE_BINARY_DIR "/tests/fake-sbx-bin");
    if (!copy)
        abort();
    return copy;
}

void tk_sbx_setenv(tk_sbx *w, const char *entry)
{
    if (w->nenv == TK_SBX_ENV_MAX || !strchr(entry, '='))
        abort();
    w->owned[w->nenv] = strdup(entry);
    if (!w->owned[w->nenv])
        abort();
    w->env[w->nenv] = w->owned[w->nenv];
    w->nenv++;
    w->env[w->nenv] = NULL;
}

void tk_sbx_setup(tk_sbx *w, const char *policy)
{
    memset(w, 0, sizeof *w);
    w->state = tk_tmpdir("fakesbx");
    w->bin_dir = fake_bin_dir();
    w->sbx = tk_path(w->bin_dir, "sbx");
    w->workspace = tk_path(w->state, "ws");
    if (mkdir(w->workspace, 0700) != 0)
        abort();
    char entry[4200];
    snprintf(entry, sizeof entry, "FAKE_SBX_STATE=%s", w->state);
    tk_sbx_setenv(w, entry);
    if (policy) {
        proc_result r;
        int status = tk_sbx_run(w, &r, "policy", "init", policy, NULL);
        if (status != 0) {
            fprintf(stderr, "tk_sbx: policy init %s failed (%d): %s%s\n", policy, status,
                    r.out.data, r.err.data);
            abort();
        }
        proc_result_free(&r);
    }
}

int tk_sbx_runv(tk_sbx *w, const char *const *extra_env, const char *const *args, int timeout_ms,
                proc_result *res)
{
    const char *argv[MAX_ARGS + 2];
    const char *env[2 * TK_SBX_ENV_MAX + 1];
    size_t n = 0, e = 0;
    argv[n++] = w->sbx;
    for (size_t i = 0; args[i]; i++) {
        if (n == MAX_ARGS + 1)
            abort();
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    for (size_t i = 0; i < w->nenv; i++)
        env[e++] = w->env[i];
    for (size_t i = 0; extra_env && extra_env[i]; i++) {
        if (e == 2 * TK_SBX_ENV_MAX)
            abort();
        env[e++] = extra_env[i];
    }
    env[e] = NULL;
    proc_opts o = {.timeout_ms = timeout_ms > 0 ? timeout_ms : TK_SBX_TIMEOUT_MS,
                   .grace_ms = 500,
                   .env = {NULL, env}};
    char err[ERR_BUFSZ];
    err_code rc = proc_run(argv, &o, res, err);
    if (rc == ERR_TIMEOUT)
        return -1;
    if (rc != ERR_OK) {
        fprintf(stderr, "tk_sbx: cannot run %s: %s\n", w->sbx, err);
        abort();
    }
    return res->exited ? res->status : 128 + res->signal;
}

int tk_sbx_run(tk_sbx *w, proc_result *res, const char *arg, ...)
{
    const char *args[MAX_ARGS + 1];
    size_t n = 0;
    va_list ap;
    va_start(ap, arg);
    for (const char *a = arg; a; a = va_arg(ap, const char *)) {
        if (n == MAX_ARGS)
            abort();
        args[n++] = a;
    }
    va_end(ap);
    args[n] = NULL;
    return tk_sbx_runv(w, NULL, args, 0, res);
}

void tk_sbx_ctx(tk_sbx *w, sbx_ctx *ctx, int timeout_ms)
{
    if (sbx_init(ctx, w->sbx, timeout_ms, timeout_ms, NULL) != ERR_OK)
        abort();
    ctx->env.add = w->env;
}

/* Kills whatever `sbx _ps` lists ("daemon PID", "session PGID NAME") and
 * returns how many. */
static int kill_leftovers(tk_sbx *w)
{
    int killed = 0;
    proc_result r;
    if (tk_sbx_run(w, &r, "_ps", NULL) == 0) {
        for (char *line = r.out.data; line && *line;) {
            char kind[16];
            long id;
            if (sscanf(line, "%15s %ld", kind, &id) == 2 && id > 1) {
                fprintf(stderr, "tk_sbx: left running after teardown: %s %ld\n", kind, id);
                if (!strcmp(kind, "session"))
                    kill((pid_t)-id, SIGKILL);
                else
                    kill((pid_t)id, SIGKILL);
                killed++;
            }
            char *nl = strchr(line, '\n');
            line = nl ? nl + 1 : NULL;
        }
    }
    proc_result_free(&r);
    return killed;
}

int tk_sbx_teardown(tk_sbx *w)
{
    proc_result r;
    tk_sbx_run(w, &r, "_fault", "hang", "off", NULL);
    proc_result_free(&r);
    tk_sbx_run(w, &r, "daemon", "stop", NULL);
    proc_result_free(&r);
    int killed = kill_leftovers(w);
    tk_rmtree(w->state);
    free(w->state);
    free(w->bin_dir);
    free(w->sbx);
    free(w->workspace);
    for (size_t i = 0; i < w->nenv; i++)
        free(w->owned[i]);
    memset(w, 0, sizeof *w);
    return killed;
}
