/* cmd_exec: see cmd_exec.h. */
#include "cmd_exec.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "daemon.h"
#include "platform.h"
#include "store.h"

extern char **environ;

#define MAX_FLAGS 128
#define ENVFILE_MAX (1024 * 1024)
#define HANDSHAKE_MS 5000

typedef struct exec_opts {
    int detach, interactive, tty;
    const char *workdir;
    const char *envs[MAX_FLAGS]; /* -e values, in order */
    size_t nenv;
    const char *files[MAX_FLAGS]; /* --env-file paths, in order */
    size_t nfiles;
    const char *name;
    char **cmd; /* NULL-terminated, from argv */
} exec_opts;

/* ---- flags ---- */

/* Matches `name VALUE` and `name=VALUE` at argv[*i]. 1 = matched (value in
 * *val, *i moved past it), 0 = another flag, -1 = the value is missing. */
static int flag_value(int argc, char **argv, int *i, const char *name, const char **val)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return 0;
    if (a[n] == '=') {
        *val = a + n + 1;
        return 1;
    }
    if (a[n] != '\0')
        return 0;
    if (*i + 1 >= argc)
        return -1;
    *val = argv[++*i];
    return 1;
}

static int any_value(int argc, char **argv, int *i, const char *const *names, const char **val)
{
    for (size_t k = 0; names[k]; k++) {
        int r = flag_value(argc, argv, i, names[k], val);
        if (r != 0)
            return r;
    }
    return 0;
}

static int push(const char **list, size_t *n, const char *v)
{
    if (*n == MAX_FLAGS)
        return fsbx_fail(NULL, "too many flags");
    list[(*n)++] = v;
    return 0;
}

static int switch_flag(const char *a, exec_opts *o)
{
    if (!strcmp(a, "-d") || !strcmp(a, "--detach"))
        o->detach = 1;
    else if (!strcmp(a, "-i") || !strcmp(a, "--interactive"))
        o->interactive = 1;
    else if (!strcmp(a, "-t") || !strcmp(a, "--tty"))
        o->tty = 1;
    else if (!strcmp(a, "-it") || !strcmp(a, "-ti"))
        o->interactive = o->tty = 1;
    else if (strcmp(a, "--privileged") != 0)
        return 0;
    return 1;
}

/* Parses flags up to NAME; what follows NAME is the command's. Returns 0,
 * or the exit status after printing sbx's error. */
static int parse(int argc, char **argv, exec_opts *o)
{
    static const char *const env_flags[] = {"-e", "--env", NULL};
    static const char *const file_flags[] = {"--env-file", NULL};
    static const char *const dir_flags[] = {"-w", "--workdir", NULL};
    static const char *const ignored[] = {"-u", "--user", "--detach-keys", NULL};
    memset(o, 0, sizeof *o);
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i], *val = NULL;
        int r = 0;
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (switch_flag(a, o))
            continue;
        if ((r = any_value(argc, argv, &i, env_flags, &val)) > 0)
            r = push(o->envs, &o->nenv, val) ? -2 : 1;
        else if (r == 0 && (r = any_value(argc, argv, &i, file_flags, &val)) > 0)
            r = push(o->files, &o->nfiles, val) ? -2 : 1;
        else if (r == 0 && (r = any_value(argc, argv, &i, dir_flags, &val)) > 0)
            o->workdir = val;
        else if (r == 0)
            r = any_value(argc, argv, &i, ignored, &val);
        if (r == -1)
            return fsbx_fail(NULL, "flag needs an argument: %s", a);
        if (r == -2)
            return 1;
        if (r == 0)
            return fsbx_fail(NULL, "unknown flag: %s", a);
    }
    if (argc - i < 2)
        return fsbx_fail("See 'sbx exec --help'.", "\"sbx exec\" requires at least 2 arguments");
    o->name = argv[i];
    o->cmd = argv + i + 1;
    return 0;
}

/* ---- the environment ---- */

typedef struct envlist {
    char **v; /* malloc'd "NAME=value" strings, NULL-terminated */
    size_t n, cap;
} envlist;

static void env_free(envlist *e)
{
    for (size_t i = 0; i < e->n; i++)
        free(e->v[i]);
    free(e->v);
    memset(e, 0, sizeof *e);
}

/* Sets name (nlen bytes) to value, replacing an earlier setting. -1 out of memory. */
static int env_set(envlist *e, const char *name, size_t nlen, const char *value)
{
    size_t len = nlen + 1 + strlen(value) + 1;
    char *entry = malloc(len);
    if (!entry)
        return -1;
    snprintf(entry, len, "%.*s=%s", (int)nlen, name, value);
    for (size_t i = 0; i < e->n; i++) {
        if (!strncmp(e->v[i], name, nlen) && e->v[i][nlen] == '=') {
            free(e->v[i]);
            e->v[i] = entry;
            return 0;
        }
    }
    if (e->n + 2 > e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 32;
        char **grown = realloc(e->v, cap * sizeof *grown);
        if (!grown) {
            free(entry);
            return -1;
        }
        e->v = grown;
        e->cap = cap;
    }
    e->v[e->n++] = entry;
    e->v[e->n] = NULL;
    return 0;
}

static int env_put(envlist *e, const char *name, const char *value)
{
    return env_set(e, name, strlen(name), value);
}

/* "K=V" sets K; a bare "K" takes the caller's K, as docker does. */
static int env_assign(envlist *e, const char *spec, size_t len)
{
    const char *eq = memchr(spec, '=', len);
    if (eq) {
        char *value = strndup(eq + 1, len - (size_t)(eq + 1 - spec));
        int rc = value ? env_set(e, spec, (size_t)(eq - spec), value) : -1;
        free(value);
        return rc;
    }
    char *name = strndup(spec, len);
    const char *caller = name ? getenv(name) : NULL;
    int rc = name ? 0 : -1;
    if (caller)
        rc = env_set(e, name, len, caller);
    free(name);
    return rc;
}

static int env_from_file(envlist *e, const char *path)
{
    FILE *fp = fopen(path, "r");
    if (!fp)
        return fsbx_fail(NULL, "open %s: %s", path, strerror(errno));
    char *buf = malloc(ENVFILE_MAX + 1);
    size_t n = buf ? fread(buf, 1, ENVFILE_MAX, fp) : 0;
    fclose(fp);
    if (!buf)
        return fsbx_fail(NULL, "out of memory");
    buf[n] = '\0';
    int rc = 0;
    for (char *line = buf; rc == 0 && line < buf + n;) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        while (len > 0 && line[len - 1] == '\r')
            len--;
        if (len > 0 && line[0] != '#' && env_assign(e, line, len) != 0)
            rc = fsbx_fail(NULL, "out of memory");
        line += (nl ? (size_t)(nl - line) + 1 : len);
        if (!nl)
            break;
    }
    free(buf);
    return rc;
}

/* The fakes' own knobs cross into the sandbox; nothing else of the caller's
 * environment does. FAKE_AGENT_* tunes the stand-in agent that uv runs. */
static int fake_control(const char *entry)
{
    return !strncmp(entry, "FAKE_SBX_", 9) || !strncmp(entry, "FAKE_UV_", 8) ||
           !strncmp(entry, "FAKE_AGENT_", 11) || !strncmp(entry, "SMOKE_TIME_SCALE=", 17);
}

/* The sandbox image trusts the TLS world's CA (FAKE_SBX_CA_FILE), as a
 * real sandbox trusts its proxy's: Python (httpx, websockets) through
 * SSL_CERT_FILE, the C stand-in through SMOKE_CA_FILE. */
static int trust_ca(envlist *e)
{
    const char *ca = getenv("FAKE_SBX_CA_FILE");
    if (!ca || !*ca)
        return 0;
    return env_put(e, "SSL_CERT_FILE", ca) || env_put(e, "SMOKE_CA_FILE", ca);
}

/* The sandbox's environment (see cmd_exec.h). Returns 0 or an exit status. */
static int build_env(const fsbx *f, const exec_opts *o, const char *home, int port, envlist *e)
{
    char path[PATH_MAX + 64], proxy[64];
    snprintf(path, sizeof path, "%s:/usr/local/bin:/usr/bin:/bin", f->bin_dir);
    snprintf(proxy, sizeof proxy, "http://127.0.0.1:%d", port);
    int bad = env_put(e, "PATH", path) || env_put(e, "HOME", home) || env_put(e, "USER", "agent");
    if (!bad && o->tty)
        bad = env_put(e, "TERM", "xterm-256color");
    for (size_t i = 0; !bad && environ[i]; i++)
        if (fake_control(environ[i]))
            bad = env_assign(e, environ[i], strlen(environ[i]));
    if (!bad)
        bad = trust_ca(e);
    if (bad)
        return fsbx_fail(NULL, "out of memory");
    for (size_t i = 0; i < o->nfiles; i++) {
        int rc = env_from_file(e, o->files[i]);
        if (rc)
            return rc;
    }
    for (size_t i = 0; !bad && i < o->nenv; i++)
        bad = env_assign(e, o->envs[i], strlen(o->envs[i]));
    static const char *const proxy_vars[] = {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
                                             "https_proxy", NULL};
    for (size_t i = 0; !bad && proxy_vars[i]; i++)
        bad = env_put(e, proxy_vars[i], proxy);
    if (!bad)
        bad = env_put(e, "NO_PROXY", "gateway.docker.internal") ||
              env_put(e, "no_proxy", "gateway.docker.internal");
    return bad ? fsbx_fail(NULL, "out of memory") : 0;
}

/* ---- the sandbox ---- */

/* Finds NAME, starts it if stopped, and learns its default workdir and
 * home. Returns 0 or an exit status. */
static int start_sandbox(const fsbx *f, const char *name, char *workdir, char *home)
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
    char now[64];
    fsbx_now_rfc3339(now, sizeof now);
    store_set_str(sb, "status", "running");
    store_set_str(sb, "last_used_at", now);
    cJSON *ws = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(sb, "workspaces"), 0);
    err_code rc = fsbx_home(f, name, home, PATH_MAX, err);
    if (rc == ERR_OK)
        snprintf(workdir, PATH_MAX, "%s", cJSON_IsString(ws) ? ws->valuestring : home);
    if (rc == ERR_OK)
        rc = store_save(&s, err);
    store_close(&s);
    if (rc == ERR_OK)
        rc = fsbx_make_home(f, name, err);
    return rc == ERR_OK ? 0 : fsbx_fail(NULL, "%s", err);
}

static int register_session(const fsbx *f, pid_t pgid, const exec_opts *o)
{
    char err[ERR_BUFSZ];
    store s;
    if (store_open(&s, f->state, err) != ERR_OK)
        return fsbx_fail(NULL, "%s", err);
    cJSON *it = cJSON_CreateObject();
    int bad = !it || !cJSON_AddItemToArray(store_get(&s, "sessions"), it) ||
              store_set_num(it, "pgid", pgid) ||
              store_set_num(it, "token", (double)plat_proc_start_token(pgid)) ||
              store_set_num(it, "exec_pid", o->detach ? 0 : getpid()) ||
              store_set_str(it, "sandbox", o->name) || store_set_bool(it, "detached", o->detach);
    err_code rc = bad ? err_set(err, ERR_NOMEM, "out of memory") : store_save(&s, err);
    store_close(&s);
    return rc == ERR_OK ? 0 : fsbx_fail(NULL, "%s", err);
}

/* After the command: forget ended sessions; was its sandbox stopped? */
static int sandbox_was_stopped(const fsbx *f, const char *name)
{
    store s;
    if (store_open(&s, f->state, NULL) != ERR_OK)
        return 1;
    store_prune_sessions(&s);
    store_save(&s, NULL);
    cJSON *sb = store_sandbox(&s, name, 1);
    int stopped = !sb || strcmp(store_str(sb, "status"), "running") != 0;
    store_close(&s);
    return stopped;
}

/* ---- the command ---- */

enum { MSG_READY = 1, MSG_CWD, MSG_EXEC };
typedef struct msg {
    int kind;
    int err;
} msg;

typedef struct launch {
    const exec_opts *o;
    const char *workdir;
    char **envp;
    int out_fd; /* -d: the detached log; else -1 */
    int msg_fd, go_fd;
} launch;

static void tell(int fd, int kind, int e)
{
    msg m = {kind, e};
    ssize_t w = write(fd, &m, sizeof m);
    (void)w;
}

/* Runs in the child: only async-signal-safe calls until exec. */
_Noreturn static void child(const launch *l)
{
    if (l->o->detach)
        setsid();
    else
        setpgid(0, 0);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGCHLD, &dfl, NULL);
    sigaction(SIGPIPE, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    tell(l->msg_fd, MSG_READY, 0);
    char go;
    if (read(l->go_fd, &go, 1) != 1)
        _exit(127);
    if (!l->o->interactive || l->o->detach) {
        int null_fd = open("/dev/null", O_RDONLY);
        if (null_fd >= 0)
            dup2(null_fd, 0);
    }
    if (l->out_fd >= 0) {
        dup2(l->out_fd, 1);
        dup2(l->out_fd, 2);
    } else if (l->o->tty) {
        dup2(1, 2); /* a TTY merges the streams */
    }
    if (chdir(l->workdir) != 0) {
        tell(l->msg_fd, MSG_CWD, errno);
        _exit(127);
    }
    environ = l->envp;
    execvp(l->o->cmd[0], l->o->cmd);
    tell(l->msg_fd, MSG_EXEC, errno);
    _exit(127);
}

/* 1 = got a message, 0 = the pipe closed (the command was exec'd), -1 = timeout. */
static int hear(int fd, msg *m)
{
    struct pollfd p = {fd, POLLIN, 0};
    int64_t deadline = clock_mono_ms() + HANDSHAKE_MS;
    for (;;) {
        int64_t left = deadline - clock_mono_ms();
        if (left <= 0)
            return -1;
        int r = poll(&p, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        ssize_t n = read(fd, m, sizeof *m);
        if (n < 0 && errno == EINTR)
            continue;
        return n == (ssize_t)sizeof *m ? 1 : n == 0 ? 0 : -1;
    }
}

/* Waits for the command, passing termination signals on to its group.
 * The signals are blocked since before fork, so none is lost. */
static int wait_command(pid_t pid, const sigset_t *set)
{
    int status = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR))
            return status;
        int sig;
        if (sigwait(set, &sig) == 0 && sig != SIGCHLD)
            kill(-pid, sig);
    }
}

static void on_sigchld(int sig)
{
    (void)sig; /* only there so a blocked SIGCHLD stays pending for sigwait */
}

/* The command itself could not be run: docker exec's words and codes. */
static int exec_failed(const char *cmd, int e)
{
    fprintf(stderr, "exec: \"%s\": %s\n", cmd,
            e == ENOENT ? "executable file not found in $PATH" : strerror(e));
    return e == ENOENT ? 127 : 126;
}

/* Forks the command, registers it, releases it. Returns 0 with *pid set,
 * or an exit status. */
static int start_command(const fsbx *f, launch *l, pid_t *pid)
{
    int mp[2], gp[2];
    if (pipe(mp) != 0 || pipe(gp) != 0)
        return fsbx_fail(NULL, "pipe: %s", strerror(errno));
    fcntl(mp[1], F_SETFD, FD_CLOEXEC);
    fcntl(gp[0], F_SETFD, FD_CLOEXEC);
    l->msg_fd = mp[1];
    l->go_fd = gp[0];
    *pid = fork();
    if (*pid == 0)
        child(l);
    close(mp[1]);
    close(gp[0]);
    msg m = {0, 0};
    int rc = *pid < 0 ? fsbx_fail(NULL, "fork: %s", strerror(errno)) : 0;
    if (rc == 0 && (hear(mp[0], &m) != 1 || m.kind != MSG_READY))
        rc = fsbx_fail(NULL, "exec session did not start");
    if (rc == 0)
        rc = register_session(f, *pid, l->o);
    if (rc == 0 && write(gp[1], "g", 1) != 1)
        rc = fsbx_fail(NULL, "exec session did not start");
    int heard = rc == 0 ? hear(mp[0], &m) : 0;
    if (heard < 0)
        rc = fsbx_fail(NULL, "exec session did not start");
    else if (heard > 0 && m.kind == MSG_CWD)
        rc = fsbx_fail(NULL, "workdir %s: %s", l->workdir, strerror(m.err));
    else if (heard > 0)
        rc = exec_failed(l->o->cmd[0], m.err);
    close(mp[0]);
    close(gp[1]);
    if (rc != 0 && *pid > 0) {
        kill(*pid, SIGKILL);
        waitpid(*pid, NULL, 0);
    }
    return rc;
}

static int run(const fsbx *f, const exec_opts *o, const char *workdir, char **envp)
{
    launch l = {o, workdir, envp, -1, -1, -1};
    char logpath[PATH_MAX + 32];
    if (o->detach) {
        snprintf(logpath, sizeof logpath, "%s/detached.log", f->state);
        l.out_fd = open(logpath, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        if (l.out_fd < 0)
            return fsbx_fail(NULL, "open %s: %s", logpath, strerror(errno));
    }
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGCHLD);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigchld;
    sigaction(SIGCHLD, &sa, NULL);
    sigprocmask(SIG_BLOCK, &set, &old);
    pid_t pid = -1;
    int rc = start_command(f, &l, &pid);
    if (l.out_fd >= 0)
        close(l.out_fd);
    if (rc != 0 || o->detach)
        return rc;
    int status = wait_command(pid, &set);
    /* However the command took its end, a session cut by a stop fails. */
    if (sandbox_was_stopped(f, o->name))
        return fsbx_fail(NULL, "exec session ended: sandbox '%s' was stopped", o->name);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int cmd_exec(const fsbx *f, int argc, char **argv)
{
    exec_opts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    char workdir[PATH_MAX], home[PATH_MAX], err[ERR_BUFSZ];
    rc = start_sandbox(f, o.name, workdir, home);
    if (rc)
        return rc;
    int port;
    if (daemon_proxy_port(f, o.name, &port, err) != ERR_OK)
        return fsbx_fail(NULL, "failed to start sandbox: %s", err);
    envlist env = {0};
    rc = build_env(f, &o, home, port, &env);
    if (rc == 0)
        rc = run(f, &o, o.workdir ? o.workdir : workdir, env.v);
    env_free(&env);
    return rc;
}
