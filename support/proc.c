/* proc: see proc.h. fork/exec rather than posix_spawn because the child
 * must join a new process group, change directory and reset signal
 * dispositions, which posix_spawn cannot all do portably. Between fork and
 * exec the child calls async-signal-safe functions only: everything it
 * needs (the environment, the resolved program path) is built before fork. */
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "afile.h"
#include "clock.h"
#include "platform.h"
#include "redact.h"
#include "sig.h"

extern char **environ;

/* Never in any child's environment: the user key and the agent key. */
static const char *const always_scrubbed[] = {"BAND_API_KEY_USER", "BAND_API_KEY", NULL};

#define TICK_MS 20           /* how often a waiting loop looks at the child */
#define REPORT_WAIT_MS 5000  /* bound on a detached launch's handshake */
#define KILL_WAIT_MS 1000    /* how long a SIGKILLed group may take to go */
#define INTERRUPT_GRACE_MS 500 /* SIGTERM -> SIGKILL when a stop signal ends a run */
#define READ_CHUNK 16384

/* What a child tells its parent through the report pipe when setup or exec
 * fails (or, for a detached launch, which pid it got). Smaller than
 * PIPE_BUF, so every write of one is atomic. */
enum report_kind { REPORT_PID = 1, REPORT_CWD, REPORT_EXEC, REPORT_SETUP };
typedef struct report {
    int kind;
    int value; /* errno, or the pid for REPORT_PID */
} report;

/* ---- checks and the environment, all before fork ---- */

static int entry_has_name(const char *entry, const char *name)
{
    size_t n = strlen(name);
    return strncmp(entry, name, n) == 0 && entry[n] == '=';
}

static int entry_named_in(const char *entry, const char *const *names)
{
    for (size_t i = 0; names && names[i]; i++)
        if (entry_has_name(entry, names[i]))
            return 1;
    return 0;
}

/* True when `entry` sets a variable that some "NAME=value" in adds sets too. */
static int entry_replaced_by(const char *entry, const char *const *adds)
{
    const char *eq = strchr(entry, '=');
    if (!eq)
        return 0;
    size_t n = (size_t)(eq - entry);
    for (size_t i = 0; adds && adds[i]; i++)
        if (strncmp(adds[i], entry, n) == 0 && adds[i][n] == '=')
            return 1;
    return 0;
}

static err_code check_argv(const char *const argv[], char *err)
{
    if (!argv || !argv[0] || !argv[0][0])
        return err_set(err, ERR_USAGE, "no program to run");
    for (size_t i = 0; argv[i]; i++)
        if (redact_has_secret(argv[i], strlen(argv[i])))
            return err_set(err, ERR_USAGE,
                           "argument %zu of %s holds a secret value; secrets go in an env file, never in argv",
                           i, argv[0]);
    return ERR_OK;
}

static err_code check_env_adds(const proc_env *env, char *err)
{
    for (size_t i = 0; env && env->add && env->add[i]; i++) {
        const char *a = env->add[i];
        const char *eq = strchr(a, '=');
        if (!eq || eq == a)
            return err_set(err, ERR_USAGE, "environment addition %zu is not NAME=value", i);
        if (entry_named_in(a, always_scrubbed) || redact_has_secret(a, strlen(a)))
            return err_set(err, ERR_USAGE,
                           "environment addition %.*s carries a secret; secrets go in an env file",
                           (int)(eq - a), a);
    }
    return ERR_OK;
}

/* The child's environment: a malloc'd NULL-terminated array whose strings
 * are borrowed from environ and env->add (valid until exec). */
static err_code build_env(const proc_env *env, char ***out, char *err)
{
    const char *const *scrub = env ? env->scrub : NULL;
    const char *const *adds = env ? env->add : NULL;
    size_t n = 0, nadd = 0;
    while (environ && environ[n])
        n++;
    while (adds && adds[nadd])
        nadd++;
    char **v = malloc((n + nadd + 1) * sizeof *v);
    if (!v)
        return err_set(err, ERR_NOMEM, "out of memory building a child environment");
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *e = environ[i];
        if (entry_named_in(e, always_scrubbed) || entry_named_in(e, scrub) ||
            entry_replaced_by(e, adds) || redact_has_secret(e, strlen(e)))
            continue;
        v[k++] = (char *)e;
    }
    for (size_t i = 0; i < nadd; i++)
        v[k++] = (char *)adds[i];
    v[k] = NULL;
    *out = v;
    return ERR_OK;
}

static const char *env_lookup(char *const envp[], const char *name)
{
    for (size_t i = 0; envp[i]; i++)
        if (entry_has_name(envp[i], name))
            return envp[i] + strlen(name) + 1;
    return NULL;
}

static int is_executable_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* execvp's search, done before fork against the child's own PATH, because
 * execvp would search the parent's and execvpe is not POSIX. */
static err_code resolve_program(const char *name, char *const envp[], char *path,
                                size_t cap, char *err)
{
    if (strchr(name, '/')) {
        if (strlen(name) >= cap)
            return err_set(err, ERR_USAGE, "program path too long");
        if (!is_executable_file(name))
            return err_set(err, ERR_NOTFOUND, "%s: not an executable file", name);
        memcpy(path, name, strlen(name) + 1);
        return ERR_OK;
    }
    const char *search = env_lookup(envp, "PATH");
    if (!search)
        search = "/usr/bin:/bin";
    for (const char *dir = search;; dir++) {
        const char *end = strchr(dir, ':');
        size_t len = end ? (size_t)(end - dir) : strlen(dir);
        int n = len ? snprintf(path, cap, "%.*s/%s", (int)len, dir, name)
                    : snprintf(path, cap, "./%s", name); /* empty entry = cwd */
        if (n > 0 && (size_t)n < cap && is_executable_file(path))
            return ERR_OK;
        if (!end)
            break;
        dir = end;
    }
    return err_set(err, ERR_NOTFOUND, "%s: not found on PATH", name);
}

/* Everything proc_run and proc_launch_detached check and build alike. */
typedef struct launch {
    char path[PATH_MAX];
    char **envp;
} launch;

static err_code launch_prepare(const char *const argv[], const proc_env *env, launch *l,
                               char *err)
{
    l->envp = NULL;
    err_code rc = check_argv(argv, err);
    if (rc == ERR_OK)
        rc = check_env_adds(env, err);
    if (rc == ERR_OK)
        rc = build_env(env, &l->envp, err);
    if (rc == ERR_OK)
        rc = resolve_program(argv[0], l->envp, l->path, sizeof l->path, err);
    if (rc != ERR_OK) {
        free(l->envp);
        l->envp = NULL;
    }
    return rc;
}

static int set_cloexec(int fd)
{
    int flags = fcntl(fd, F_GETFD);
    return flags < 0 ? -1 : fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

static int make_pipe(int fds[2])
{
    if (pipe(fds) != 0)
        return -1;
    if (set_cloexec(fds[0]) != 0 || set_cloexec(fds[1]) != 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    return 0;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* ---- the child side: async-signal-safe only ---- */

static void report_and_exit(int fd, int kind, int value)
{
    report r = {kind, value};
    ssize_t w = write(fd, &r, sizeof r);
    (void)w;
    _exit(127);
}

/* A parent that ignores SIGPIPE (libcurl users do) would pass that on:
 * ignored dispositions survive exec. Handlers do not, blocked masks do. */
static void reset_signals(void)
{
    static const int sigs[] = {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP,
                               SIGCHLD, SIGTSTP, SIGTTIN, SIGTTOU};
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

static void child_exec(const launch *l, const char *const argv[], const char *cwd,
                       int out_fd, int err_fd, int report_fd)
{
    reset_signals();
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
        report_and_exit(report_fd, REPORT_SETUP, errno);
    /* dup2 onto itself (a parent started with 0-2 closed) keeps CLOEXEC. */
    for (int fd = 0; fd <= 2; fd++)
        fcntl(fd, F_SETFD, 0);
    if (cwd && chdir(cwd) != 0)
        report_and_exit(report_fd, REPORT_CWD, errno);
    execve(l->path, (char *const *)argv, l->envp);
    report_and_exit(report_fd, REPORT_EXEC, errno);
}

/* Turns a child's setup report into the caller's error. */
static err_code report_error(const report *r, const char *prog, const char *cwd, char *err)
{
    switch (r->kind) {
    case REPORT_CWD:
        return err_set(err, ERR_IO, "cannot enter %s for %s: %s", cwd ? cwd : "?", prog,
                       strerror(r->value));
    case REPORT_EXEC:
        return err_set(err, r->value == ENOENT || r->value == EACCES ? ERR_NOTFOUND : ERR_PROCESS,
                       "cannot execute %s: %s", prog, strerror(r->value));
    default:
        return err_set(err, ERR_PROCESS, "cannot set up the child for %s: %s", prog,
                       strerror(r->value));
    }
}

/* Reads one report, waiting at most wait_ms. 1 = got one, 0 = the pipe
 * closed without one (for a run: exec succeeded), -1 = timed out. */
static int read_report(int fd, report *r, int wait_ms)
{
    size_t got = 0;
    int64_t deadline = clock_mono_ms() + wait_ms;
    while (got < sizeof *r) {
        int64_t left = deadline - clock_mono_ms();
        if (left <= 0)
            return -1;
        struct pollfd p = {fd, POLLIN, 0};
        int pr = poll(&p, 1, (int)left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            return -1;
        ssize_t n = read(fd, (char *)r + got, sizeof *r - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return got == 0 ? 0 : -1;
        got += (size_t)n;
    }
    return 1;
}

/* ---- killing groups ---- */

/* True once the group's leader has ended. A zombie counts as ended: an
 * orphan is re-parented to PID 1, and where PID 1 does not reap (some
 * containers) its zombie would otherwise look alive forever. The leader is
 * reaped here first in case it is the caller's own child. */
static int leader_gone(pid_t pgid, uint64_t token)
{
    waitpid(pgid, NULL, WNOHANG);
    if (kill(-pgid, 0) != 0 && errno == ESRCH)
        return 1;
    return token == 0 || !plat_proc_alive(pgid, token);
}

static int wait_leader_gone(pid_t pgid, uint64_t token, int wait_ms)
{
    int64_t deadline = clock_mono_ms() + wait_ms;
    for (;;) {
        if (leader_gone(pgid, token))
            return 1;
        if (clock_mono_ms() >= deadline)
            return 0;
        clock_sleep_ms(TICK_MS);
    }
}

err_code proc_kill_group(pid_t pgid, int grace_ms, char *err)
{
    if (pgid <= 1)
        return err_set(err, ERR_USAGE, "refusing to signal process group %ld", (long)pgid);
    if (grace_ms <= 0)
        grace_ms = PROC_GRACE_MS;
    uint64_t token = plat_proc_start_token(pgid);
    if (kill(-pgid, SIGTERM) != 0) {
        if (errno == ESRCH)
            return ERR_OK;
        return err_set(err, ERR_PROCESS, "cannot signal process group %ld: %s", (long)pgid,
                       strerror(errno));
    }
    /* A stopped process keeps SIGTERM pending; wake it so it can act on it. */
    kill(-pgid, SIGCONT);
    wait_leader_gone(pgid, token, grace_ms);
    /* Whatever is left (the leader ignoring SIGTERM, or its stragglers). */
    kill(-pgid, SIGKILL);
    if (token && plat_proc_alive(pgid, token))
        kill(pgid, SIGKILL); /* a leader that moved out of its own group */
    if (wait_leader_gone(pgid, token, KILL_WAIT_MS))
        return ERR_OK;
    return err_set(err, ERR_TIMEOUT, "process group %ld still present after SIGKILL",
                   (long)pgid);
}

/* ---- proc_run ---- */

static err_code stream_init(proc_stream *s)
{
    s->data = calloc(1, 1);
    s->len = 0;
    s->truncated = 0;
    return s->data ? ERR_OK : ERR_NOMEM;
}

/* Reads what fd has now. Returns 0 at EOF or on a read error (the stream
 * is over either way), 1 when more may come, -1 out of memory. */
static int stream_read(int fd, proc_stream *s, size_t cap)
{
    char chunk[READ_CHUNK];
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? 1 : 0;
    if (n == 0)
        return 0;
    size_t room = cap > s->len ? cap - s->len : 0;
    size_t keep = (size_t)n < room ? (size_t)n : room;
    if (keep < (size_t)n)
        s->truncated = 1;
    if (keep > 0) {
        char *grown = realloc(s->data, s->len + keep + 1);
        if (!grown)
            return -1;
        s->data = grown;
        memcpy(s->data + s->len, chunk, keep);
        s->len += keep;
        s->data[s->len] = '\0';
    }
    return 1;
}

static void record_status(proc_result *res, int status)
{
    if (WIFEXITED(status)) {
        res->exited = 1;
        res->status = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        res->signal = WTERMSIG(status);
    }
}

/* Ends a run's child: SIGTERM to its group and to the child itself (a
 * child may have moved to another group of our session, out of reach of
 * kill(-pid)), the grace for it to end, then SIGKILL to the group and to
 * the child by pid, and the status. Every wait here is bounded: a child
 * that survives SIGKILL (uninterruptible sleep) is left as it is rather
 * than hanging band-smoke; res then says neither exited nor signalled. */
static void kill_run(pid_t pid, int grace_ms, proc_result *res)
{
    int status = 0;
    int reaped = 0;
    kill(-pid, SIGTERM);
    kill(pid, SIGTERM);
    kill(-pid, SIGCONT);
    kill(pid, SIGCONT);
    int64_t deadline = clock_mono_ms() + grace_ms;
    while (!reaped && clock_mono_ms() < deadline) {
        reaped = waitpid(pid, &status, WNOHANG) == pid;
        if (!reaped)
            clock_sleep_ms(TICK_MS);
    }
    kill(-pid, SIGKILL);
    if (!reaped)
        kill(pid, SIGKILL);
    deadline = clock_mono_ms() + KILL_WAIT_MS;
    while (!reaped && clock_mono_ms() < deadline) {
        reaped = waitpid(pid, &status, WNOHANG) == pid;
        if (!reaped)
            clock_sleep_ms(TICK_MS);
    }
    if (reaped)
        record_status(res, status);
}

typedef struct run_io {
    int fd[2];          /* stdout, stderr read ends; -1 once closed */
    proc_stream *s[2];
    size_t cap;
} run_io;

/* Reads what the open streams have, waiting at most wait_ms for some.
 * Closes a stream at its end. -1 when out of memory. */
static int read_ready(run_io *io, int wait_ms)
{
    struct pollfd p[2];
    int map[2], np = 0;
    for (int i = 0; i < 2; i++)
        if (io->fd[i] >= 0) {
            p[np] = (struct pollfd){io->fd[i], POLLIN, 0};
            map[np++] = i;
        }
    if (poll(p, (nfds_t)np, wait_ms) <= 0)
        return 0;
    for (int k = 0; k < np; k++) {
        if (!(p[k].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        int i = map[k];
        int r = stream_read(io->fd[i], io->s[i], io->cap);
        if (r < 0)
            return -1;
        if (r == 0)
            close_fd(&io->fd[i]);
    }
    return 0;
}

/* Waits for the child, reading its output, until it has exited and its
 * pipes are drained (or PROC_DRAIN_MS passed), or the deadline. Returns
 * ERR_OK, ERR_TIMEOUT or ERR_NOMEM. */
static err_code collect(pid_t pid, const char *prog, run_io *io, const proc_opts *opts,
                        int64_t start, proc_result *res, char *err)
{
    int64_t deadline = start + opts->timeout_ms;
    int64_t drain_until = 0;
    int reaped = 0, status = 0;
    for (;;) {
        if (!reaped && waitpid(pid, &status, WNOHANG) == pid) {
            reaped = 1;
            record_status(res, status);
            drain_until = clock_mono_ms() + PROC_DRAIN_MS;
        }
        int64_t now = clock_mono_ms();
        if (reaped && ((io->fd[0] < 0 && io->fd[1] < 0) || now >= drain_until))
            return ERR_OK;
        if (!reaped && sig_pending()) {
            kill_run(pid, INTERRUPT_GRACE_MS, res);
            return err_set(err, ERR_INTERRUPTED, "%s was stopped by %s; its process group was "
                                                 "killed", prog, sig_name(sig_pending()));
        }
        if (!reaped && now >= deadline) {
            res->timed_out = 1;
            kill_run(pid, opts->grace_ms > 0 ? opts->grace_ms : PROC_GRACE_MS, res);
            return err_set(err, ERR_TIMEOUT,
                           "%s did not finish within %d ms; its process group was killed", prog,
                           opts->timeout_ms);
        }
        if (!reaped && opts->on_tick)
            opts->on_tick(opts->tick_ud);
        int64_t left = (reaped ? drain_until : deadline) - now;
        if (read_ready(io, (int)(left < TICK_MS ? left : TICK_MS)) < 0) {
            if (!reaped)
                kill_run(pid, TICK_MS, res);
            return err_set(err, ERR_NOMEM, "out of memory capturing the output of %s", prog);
        }
    }
}

void proc_result_free(proc_result *res)
{
    if (!res)
        return;
    free(res->out.data);
    free(res->err.data);
    res->out.data = res->err.data = NULL;
    res->out.len = res->err.len = 0;
}

void proc_stream_last_line(const proc_stream *s, char *out, size_t cap)
{
    size_t end = s->len;
    while (end > 0 && (s->data[end - 1] == '\n' || s->data[end - 1] == '\r'))
        end--;
    size_t begin = end;
    while (begin > 0 && s->data[begin - 1] != '\n')
        begin--;
    char *line = malloc(end - begin + 1);
    out[0] = '\0';
    if (!line)
        return;
    memcpy(line, s->data + begin, end - begin);
    line[end - begin] = '\0';
    redact_into(line, out, cap);
    free(line);
}

static err_code run_checks(const char *const argv[], const proc_opts *opts, char *err)
{
    if (!opts)
        return err_set(err, ERR_USAGE, "proc_run needs options (at least a timeout)");
    if (opts->timeout_ms <= 0)
        return err_set(err, ERR_USAGE, "proc_run needs a positive timeout");
    if (!argv || !argv[0] || !argv[0][0])
        return err_set(err, ERR_USAGE, "no program to run");
    return ERR_OK;
}

typedef struct run_pipes {
    int out[2], err[2], rep[2]; /* stdout, stderr, the setup report */
} run_pipes;

static void close_pipes(run_pipes *p)
{
    for (int i = 0; i < 2; i++) {
        close_fd(&p->out[i]);
        close_fd(&p->err[i]);
        close_fd(&p->rep[i]);
    }
}

/* Forks the child into a process group of its own and waits until it has
 * exec'd (or reported why it could not). */
static err_code spawn(const launch *l, const char *const argv[], const char *cwd, run_pipes *p,
                      pid_t *pid, char *err)
{
    if (make_pipe(p->out) != 0 || make_pipe(p->err) != 0 || make_pipe(p->rep) != 0)
        return err_set(err, ERR_PROCESS, "cannot make pipes for %s: %s", argv[0], strerror(errno));
    *pid = fork();
    if (*pid < 0)
        return err_set(err, ERR_PROCESS, "cannot fork for %s: %s", argv[0], strerror(errno));
    if (*pid == 0) {
        setpgid(0, 0);
        child_exec(l, argv, cwd, p->out[1], p->err[1], p->rep[1]);
    }
    /* Both sides set the group, so that kill(-pid) can never run before it
     * exists. EACCES here only means the child has exec'd already. */
    setpgid(*pid, *pid);
    close_fd(&p->out[1]);
    close_fd(&p->err[1]);
    close_fd(&p->rep[1]);
    report r;
    int got = read_report(p->rep[0], &r, REPORT_WAIT_MS);
    if (got == 0)
        return ERR_OK;
    if (got < 0) {
        kill(-*pid, SIGKILL);
        kill(*pid, SIGKILL);
    }
    while (waitpid(*pid, NULL, 0) < 0 && errno == EINTR) {
    }
    return got > 0 ? report_error(&r, argv[0], cwd, err)
                   : err_set(err, ERR_PROCESS, "%s did not start", argv[0]);
}

err_code proc_run(const char *const argv[], const proc_opts *opts, proc_result *res,
                  char *err)
{
    memset(res, 0, sizeof *res);
    if (stream_init(&res->out) != ERR_OK || stream_init(&res->err) != ERR_OK)
        return err_set(err, ERR_NOMEM, "out of memory");
    err_code rc = run_checks(argv, opts, err);
    launch l;
    if (rc == ERR_OK)
        rc = launch_prepare(argv, &opts->env, &l, err);
    if (rc != ERR_OK)
        return rc;
    if (sig_pending()) {
        free(l.envp);
        return err_set(err, ERR_INTERRUPTED, "%s not started: %s asked band-smoke to stop",
                       argv[0], sig_name(sig_pending()));
    }
    run_pipes p = {{-1, -1}, {-1, -1}, {-1, -1}};
    int64_t start = clock_mono_ms();
    pid_t pid = -1;
    rc = spawn(&l, argv, opts->cwd, &p, &pid, err);
    if (rc == ERR_OK) {
        run_io io = {{p.out[0], p.err[0]}, {&res->out, &res->err},
                     opts->capture_max ? opts->capture_max : PROC_CAPTURE_MAX};
        rc = collect(pid, argv[0], &io, opts, start, res, err);
        p.out[0] = io.fd[0];
        p.err[0] = io.fd[1];
        res->duration_ms = clock_mono_ms() - start;
    }
    close_pipes(&p);
    free(l.envp);
    return rc;
}

/* ---- proc_launch_detached ---- */

/* The intermediate child: new session, fork the program, report its pid,
 * and leave. The grandchild waits on `go` until the parent has taken its
 * start token, so the token is read while the process certainly exists. */
static void detach_child(const launch *l, const char *const argv[], const char *cwd,
                         int log_fd, int report_fd, int go_fd)
{
    if (setsid() < 0)
        report_and_exit(report_fd, REPORT_SETUP, errno);
    pid_t pid = fork();
    if (pid < 0)
        report_and_exit(report_fd, REPORT_SETUP, errno);
    if (pid == 0) {
        /* Not a session leader, so it can never gain a controlling
         * terminal; its own group, so proc_kill_group(pid) ends it all. */
        setpgid(0, 0);
        char go;
        if (read(go_fd, &go, 1) != 1)
            _exit(127);
        child_exec(l, argv, cwd, log_fd, log_fd, report_fd);
    }
    report r = {REPORT_PID, (int)pid};
    ssize_t w = write(report_fd, &r, sizeof r);
    _exit(w == (ssize_t)sizeof r ? 0 : 1);
}

/* Parent side of the handshake: pid, token, go, exec result. */
static err_code detach_handshake(const char *prog, const char *cwd, int report_fd, int go_fd,
                                 proc_detached *out, char *err)
{
    report r;
    int got = read_report(report_fd, &r, REPORT_WAIT_MS);
    if (got < 0)
        return err_set(err, ERR_TIMEOUT, "launching %s: no answer from the intermediate child", prog);
    if (got == 0)
        return err_set(err, ERR_PROCESS, "launching %s: the intermediate child died", prog);
    if (r.kind != REPORT_PID)
        return report_error(&r, prog, cwd, err);
    pid_t pid = (pid_t)r.value;
    uint64_t token = plat_proc_start_token(pid);
    if (token == 0) {
        kill(pid, SIGKILL);
        return err_set(err, ERR_PROCESS, "launching %s: cannot identify process %ld", prog, (long)pid);
    }
    char go = 'g';
    if (write(go_fd, &go, 1) != 1) {
        kill(pid, SIGKILL);
        return err_set(err, ERR_PROCESS, "launching %s: cannot release the child", prog);
    }
    got = read_report(report_fd, &r, REPORT_WAIT_MS);
    if (got > 0)
        return report_error(&r, prog, cwd, err);
    if (got < 0) {
        kill(pid, SIGKILL);
        return err_set(err, ERR_TIMEOUT, "launching %s: exec did not complete", prog);
    }
    out->pid = pid;
    out->start_token = token;
    return ERR_OK;
}

/* Forks the intermediate child and holds the handshake with it. */
static err_code detach(const launch *l, const char *const argv[], const char *cwd, int log_fd,
                       proc_detached *out, char *err)
{
    int rep[2] = {-1, -1}, go[2] = {-1, -1};
    err_code rc = ERR_OK;
    pid_t mid = -1;
    if (make_pipe(rep) != 0 || make_pipe(go) != 0)
        rc = err_set(err, ERR_PROCESS, "cannot make pipes for %s: %s", argv[0], strerror(errno));
    else if ((mid = fork()) < 0)
        rc = err_set(err, ERR_PROCESS, "cannot fork for %s: %s", argv[0], strerror(errno));
    if (mid == 0) {
        close(rep[0]);
        close(go[1]);
        detach_child(l, argv, cwd, log_fd, rep[1], go[0]);
    }
    if (rc == ERR_OK) {
        close_fd(&rep[1]);
        close_fd(&go[0]);
        rc = detach_handshake(argv[0], cwd, rep[0], go[1], out, err);
        while (waitpid(mid, NULL, 0) < 0 && errno == EINTR) {
        }
    }
    for (int i = 0; i < 2; i++) {
        close_fd(&rep[i]);
        close_fd(&go[i]);
    }
    return rc;
}

err_code proc_launch_detached(const char *const argv[], const char *cwd, const proc_env *env,
                              const char *log_path, proc_detached *out, char *err)
{
    if (!out || !log_path || !*log_path)
        return err_set(err, ERR_USAGE, "detached launch needs a log file and a result");
    memset(out, 0, sizeof *out);
    launch l;
    err_code rc = launch_prepare(argv, env, &l, err);
    if (rc != ERR_OK)
        return rc;
    int log_fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (log_fd < 0) {
        rc = err_set(err, ERR_IO, "cannot open log %s: %s", log_path, strerror(errno));
    } else {
        rc = detach(&l, argv, cwd, log_fd, out, err);
        close(log_fd);
    }
    free(l.envp);
    return rc;
}

/* ---- env files ---- */

static int valid_env_name(const char *s, size_t n)
{
    if (n == 0 || !(s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
        return 0;
    for (size_t i = 1; i < n; i++) {
        char c = s[i];
        if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
            return 0;
    }
    return 1;
}

static err_code check_env_entries(const char *const *entries, char *err)
{
    if (!entries || !entries[0])
        return err_set(err, ERR_USAGE, "an env file needs at least one entry");
    for (size_t i = 0; entries[i]; i++) {
        const char *eq = strchr(entries[i], '=');
        if (!eq || !valid_env_name(entries[i], (size_t)(eq - entries[i])))
            return err_set(err, ERR_USAGE, "env file entry %zu is not NAME=value", i);
        if (strpbrk(eq + 1, "\r\n"))
            return err_set(err, ERR_USAGE, "the value of %.*s holds a line break",
                           (int)(eq - entries[i]), entries[i]);
    }
    return ERR_OK;
}

static err_code check_private_dir(const char *dir, char *err)
{
    struct stat st;
    if (lstat(dir, &st) != 0)
        return err_set(err, ERR_CONFIG, "env file folder %s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return err_set(err, ERR_CONFIG, "env file folder %s is not a directory", dir);
    if (st.st_uid != geteuid())
        return err_set(err, ERR_CONFIG, "env file folder %s belongs to uid %ld, not to us (uid %ld)",
                       dir, (long)st.st_uid, (long)geteuid());
    if ((st.st_mode & 077) != 0)
        return err_set(err, ERR_CONFIG, "env file folder %s must be mode 0700 (is %03o)", dir,
                       (unsigned)(st.st_mode & 0777));
    return ERR_OK;
}

err_code proc_envfile_write(const char *dir, const char *name, const char *const *entries,
                            char *path_out, size_t path_cap, char *err)
{
    if (!dir || !name || !*name || strchr(name, '/') || !strcmp(name, ".") ||
        !strcmp(name, "..") || !path_out)
        return err_set(err, ERR_USAGE, "env file needs a folder and a plain file name");
    err_code rc = check_env_entries(entries, err);
    if (rc == ERR_OK)
        rc = check_private_dir(dir, err);
    if (rc != ERR_OK)
        return rc;
    int n = snprintf(path_out, path_cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= path_cap)
        return err_set(err, ERR_USAGE, "env file path does not fit");
    int fd = open(path_out, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return err_set(err, ERR_IO, "cannot create env file %s: %s", path_out, strerror(errno));
    int bad = fchmod(fd, 0600) != 0;
    for (size_t i = 0; !bad && entries[i]; i++)
        bad = afile_write_all(fd, entries[i], strlen(entries[i])) != ERR_OK ||
              afile_write_all(fd, "\n", 1) != ERR_OK;
    int saved = errno;
    if (close(fd) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    if (bad) {
        unlink(path_out);
        return err_set(err, ERR_IO, "cannot write env file %s: %s", path_out, strerror(saved));
    }
    return ERR_OK;
}

err_code proc_envfile_remove(const char *path, char *err)
{
    if (!path || !*path)
        return err_set(err, ERR_USAGE, "no env file to remove");
    if (unlink(path) != 0 && errno != ENOENT)
        return err_set(err, ERR_IO, "cannot remove env file %s: %s", path, strerror(errno));
    return ERR_OK;
}
