#define _GNU_SOURCE /* tests only: /proc and PATH tricks are fine here */
#include "world.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <openssl/rand.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc.h"
#include "run.h"
#include "state.h"
#include "tk.h"

static void random_hex(char *out, int bytes)
{
    unsigned char b[32];
    if (bytes > 32 || RAND_bytes(b, bytes) != 1)
        abort();
    for (int i = 0; i < bytes; i++)
        sprintf(out + 2 * i, "%02x", b[i]);
}

void world_setenv(world *w, const char *name, const char *value)
{
    size_t len = strlen(name);
    char *entry = malloc(len + strlen(value) + 2);
    if (!entry)
        abort();
    sprintf(entry, "%s=%s", name, value);
    for (int i = 0; i < w->nenv; i++) {
        if (!strncmp(w->env[i], name, len) && w->env[i][len] == '=') {
            free(w->env[i]);
            w->env[i] = entry;
            return;
        }
    }
    if (w->nenv + 1 >= W_MAX_ENV)
        abort();
    w->env[w->nenv++] = entry;
    w->env[w->nenv] = NULL;
}

static int empty_or_missing(const char *dir)
{
    char cmd[W_PATH];
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return 1;
    snprintf(cmd, sizeof cmd, "%s/state.json", dir);
    return stat(cmd, &sb) != 0;
}

static int locate_binaries(world *w)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return -1;
    self[n] = '\0';
    snprintf(w->band_smoke, sizeof w->band_smoke, "%s/band-smoke", dirname(self));
    snprintf(w->sbx_bin, sizeof w->sbx_bin, "%s/sbx", SMOKE_FAKE_SBX_BIN);
    snprintf(w->fake_agent, sizeof w->fake_agent, "%s/fake-agent", SMOKE_TEST_BIN_DIR);
    const char *need[] = {w->band_smoke, w->sbx_bin, w->fake_agent};
    for (int i = 0; i < 3; i++) {
        if (access(need[i], X_OK) != 0) {
            fprintf(stderr, "rehearsal: %s is not built\n", need[i]);
            return -1;
        }
    }
    return 0;
}

static int make_folders(world *w)
{
    char *root = tk_tmpdir("rehearsal");
    snprintf(w->root, sizeof w->root, "%s", root);
    free(root);
    const char *given = getenv("SMOKE_STATE_DIR");
    if (given && *given) {
        /* Never rehearse over a real run. */
        if (!empty_or_missing(given)) {
            fprintf(stderr, "rehearsal: SMOKE_STATE_DIR %s already holds a run; give an empty "
                            "folder or unset it\n", given);
            return -1;
        }
        snprintf(w->state_dir, sizeof w->state_dir, "%s", given);
    } else {
        snprintf(w->state_dir, sizeof w->state_dir, "%s/state", w->root);
        w->own_state_dir = 1;
    }
    snprintf(w->workspace, sizeof w->workspace, "%s/workspace", w->root);
    snprintf(w->sbx_state, sizeof w->sbx_state, "%s/sbx", w->root);
    snprintf(w->secrets, sizeof w->secrets, "%s/secrets", w->root);
    snprintf(w->agent_log, sizeof w->agent_log, "%s/agent.log", w->state_dir);
    if (mkdir(w->workspace, 0700) || mkdir(w->sbx_state, 0700) || mkdir(w->secrets, 0700))
        return -1;
    return 0;
}

static void write_env_file(world *w, const world_opts *o)
{
    char text[2048];
    snprintf(w->env_file, sizeof w->env_file, "%s/env.test", w->secrets);
    snprintf(text, sizeof text,
             "# written by band-smoke-rehearsal: loopback fakes and a canary key\n"
             "BAND_REST_URL=%s\nBAND_WS_URL=%s\nBAND_API_KEY_USER=%s\n",
             o->rest_url ? o->rest_url : w->band.rest_url,
             o->ws_url ? o->ws_url : w->band.ws_url, w->canary);
    tk_write(w->env_file, text);
}

static void build_env(world *w, const world_opts *o)
{
    char path[W_PATH * 2], timeout[16];
    snprintf(path, sizeof path, "%s:/usr/local/bin:/usr/bin:/bin", SMOKE_FAKE_SBX_BIN);
    snprintf(timeout, sizeof timeout, "%d", o->e2e_timeout_s > 0 ? o->e2e_timeout_s : 20);
    world_setenv(w, "PATH", path);
    world_setenv(w, "HOME", w->root);
    world_setenv(w, "TMPDIR", w->root);
    world_setenv(w, "LANG", "C.UTF-8");
    world_setenv(w, "SMOKE_STATE_DIR", w->state_dir);
    world_setenv(w, "SMOKE_ENV_FILE", w->env_file);
    world_setenv(w, "SBX_SANDBOX", w->sandbox);
    world_setenv(w, "SBX_WORKSPACE", w->workspace);
    world_setenv(w, "SBX_BIN", w->sbx_bin);
    world_setenv(w, "E2E_TIMEOUT", timeout);
    if (o->time_scale)
        world_setenv(w, "SMOKE_TIME_SCALE", o->time_scale);
    if (o->agent_cmd)
        world_setenv(w, "FAKE_UV_AGENT_CMD", o->agent_cmd);
    world_setenv(w, "FAKE_SBX_STATE", w->sbx_state);
    world_setenv(w, "FAKE_UV_AGENT", w->fake_agent);
    if (w->tls_on) {
        world_setenv(w, "SMOKE_CA_FILE", w->tls.ca);
        world_setenv(w, "FAKE_SBX_CA_FILE", w->tls.ca);
    }
    const char *passthrough[] = {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", NULL};
    for (int i = 0; passthrough[i]; i++)
        if (getenv(passthrough[i]))
            world_setenv(w, passthrough[i], getenv(passthrough[i]));
    for (int i = 0; i < 8 && o->extra_env[i]; i++) {
        const char *eq = strchr(o->extra_env[i], '=');
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(eq - o->extra_env[i]), o->extra_env[i]);
        world_setenv(w, name, eq + 1);
    }
}

int world_open(world *w, const world_opts *o)
{
    memset(w, 0, sizeof *w);
    const char *canary = getenv("SMOKE_CANARY_KEY");
    if (canary && *canary) {
        snprintf(w->canary, sizeof w->canary, "%s", canary);
    } else {
        memcpy(w->canary, "canary-", 7);
        random_hex(w->canary + 7, 12);
    }
    memcpy(w->sandbox, "rehearsal-", 10);
    random_hex(w->sandbox + 10, 3);
    if (locate_binaries(w) || make_folders(w))
        return -1;
    tk_band_opts bo = {.user_key = w->canary, .heartbeat_timeout_ms = o->heartbeat_timeout_ms};
    if (!o->plain_http) {
        char *dir = tk_path(w->root, "tls");
        int made = mkdir(dir, 0700) == 0 && tk_tls_make(dir, &w->tls) == 0;
        free(dir);
        if (!made)
            return -1;
        w->tls_on = 1;
        bo.tls = &w->tls;
    }
    if (tk_band_start_opts(&w->band, &bo) != 0)
        return -1;
    write_env_file(w, o);
    build_env(w, o);
    char *init[] = {w->sbx_bin, "policy", "init", "balanced", NULL};
    return run_quiet(w, init, 20000) == 0 ? 0 : -1;
}

/* The launcher holds the agent's sbx exec session in its own process group;
 * the state knows its pid. */
static void stop_launcher(world *w)
{
    state_store store;
    state_t *st = NULL;
    char err[ERR_BUFSZ];
    if (state_store_init(&store, w->state_dir, NULL, err) != ERR_OK ||
        state_load(&store, &st, err) != ERR_OK)
        return;
    if (st->agent_process.pid > 1)
        proc_kill_group((pid_t)st->agent_process.pid, 1000, err);
    state_free(st);
}

static void remove_child(const char *root, const char *name)
{
    char *path = tk_path(root, name);
    tk_rmtree(path);
    free(path);
}

void world_close(world *w)
{
    if (!w->root[0])
        return;
    char *stop[] = {w->sbx_bin, "daemon", "stop", NULL};
    run_quiet(w, stop, 20000);
    stop_launcher(w);
    tk_band_stop(&w->band);
    for (int i = 0; i < w->nenv; i++)
        free(w->env[i]);
    w->nenv = 0;
    if (w->clean) {
        tk_rmtree(w->root);
    } else {
        /* Keep the evidence, never the secrets: the state folder stays for
         * inspection; the workspace, the fake sbx and the canary file go. */
        remove_child(w->root, "secrets");
        remove_child(w->root, "workspace");
        remove_child(w->root, "sbx");
        remove_child(w->root, "tls");
    }
    if (!w->clean || !w->own_state_dir)
        printf("rehearsal: state folder: %s\n", w->state_dir);
    w->root[0] = '\0';
}
