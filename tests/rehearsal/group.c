#define _GNU_SOURCE /* pipe2; /proc/self/exe: tests only */
#include "group.h"

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
#include "run.h"
#include "sig.h"

typedef struct member {
    const char *name;
    pid_t pid;
    int fd;         /* read end of its output; -1 once drained */
    int done;       /* reaped */
    int status;     /* exit code, 128 + signal */
    int64_t started_ms, took_ms;
    char *text;
    size_t len, cap;
} member;

/* The signal flag and the drivers it is passed on to: the one piece of
 * global state, as a signal handler needs it. */
static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t driver_pids[GROUP_MAX];

static void on_stop(int sig)
{
    if (!stop_signal)
        stop_signal = sig;
    for (int i = 0; i < GROUP_MAX; i++)
        if (driver_pids[i] > 1)
            kill((pid_t)driver_pids[i], sig);
}

/* One driver: this program with argv, argv[name_at] replaced by the name. */
static int start(member *m, char *const argv[], int name_at)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    int argc = 0;
    while (argv[argc])
        argc++;
    char **args = calloc((size_t)argc + 1, sizeof *args);
    if (!args)
        abort();
    memcpy(args, argv, (size_t)argc * sizeof *args);
    args[name_at] = (char *)m->name;
    fflush(stdout);
    m->started_ms = clock_mono_ms();
    m->pid = fork();
    if (m->pid == 0) {
        setpgid(0, 0); /* the signals come from here, once */
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        execv("/proc/self/exe", args);
        fprintf(stderr, "cannot run the rehearsal driver: %s\n", strerror(errno));
        _exit(127);
    }
    free(args);
    close(fds[1]);
    if (m->pid < 0) {
        close(fds[0]);
        return -1;
    }
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    m->fd = fds[0];
    return 0;
}

/* Reads what the driver has written so far; at end of file closes. */
static void drain(member *m)
{
    char buf[8192];
    ssize_t n;
    while ((n = read(m->fd, buf, sizeof buf)) > 0) {
        if (m->len + (size_t)n + 1 > m->cap) {
            m->cap = (m->len + (size_t)n + 1) * 2;
            m->text = realloc(m->text, m->cap);
            if (!m->text)
                abort();
        }
        memcpy(m->text + m->len, buf, (size_t)n);
        m->len += (size_t)n;
        m->text[m->len] = '\0';
    }
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        close(m->fd);
        m->fd = -1;
    }
}

/* Reaps driver i if it has ended; then nothing more will come than what
 * its pipe still holds (a process it left behind must not hold us). It is
 * taken off the signal list while still a zombie, whose pid no other
 * process can have yet. */
static void reap(member *m, int i)
{
    siginfo_t info;
    memset(&info, 0, sizeof info);
    if (m->done || waitid(P_PID, (id_t)m->pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
        info.si_pid != m->pid)
        return;
    driver_pids[i] = 0;
    int status;
    while (waitpid(m->pid, &status, 0) < 0 && errno == EINTR)
        ;
    m->done = 1;
    m->took_ms = clock_mono_ms() - m->started_ms;
    m->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (m->fd >= 0) {
        drain(m);
        if (m->fd >= 0)
            close(m->fd);
        m->fd = -1;
    }
}

static void print_transcript(const member *m, int i, int n)
{
    printf("==== rehearsal %s (%d of %d in this group) ====\n%s", m->name, i + 1, n,
           m->text ? m->text : "");
    if (m->len && m->text[m->len - 1] != '\n')
        printf("\n");
    fflush(stdout);
}

/* Starts driver i, or marks it ended when it cannot start or a stop
 * signal came first. */
static void launch(member *m, int i, char *const argv[], int name_at)
{
    if (stop_signal || start(m, argv, name_at) != 0) {
        m->done = 1;
        m->status = stop_signal ? 128 + stop_signal : 127;
        return;
    }
    driver_pids[i] = (sig_atomic_t)m->pid;
    if (stop_signal) /* it came between fork and the line above */
        kill(m->pid, stop_signal);
}

static const char *verdict(int status)
{
    return status == 0 ? "PASS" : stop_signal && status >= 128 ? "INTERRUPTED" : "FAIL";
}

/* The driver's own count: "N checks, M failed" from its last line
 * "rehearsal NAME: PASS, N checks, M failed; ...". */
static void own_count(const member *m, char *out, size_t cap)
{
    char head[96];
    snprintf(head, sizeof head, "\nrehearsal %s: ", m->name);
    const char *at = m->text ? strstr(m->text, head) : NULL;
    const char *next;
    while (at && (next = strstr(at + 1, head)) != NULL)
        at = next;
    const char *from = at ? strchr(at + strlen(head), ' ') : NULL;
    size_t len = from ? strcspn(from + 1, ";\n") : 0;
    snprintf(out, cap, "%.*s", (int)len, from ? from + 1 : "");
}

int group_run(char *const argv[], int name_at, char *const names[], int n, int jobs)
{
    if (n < 1 || n > GROUP_MAX) {
        fprintf(stderr, "band-smoke-rehearsal: a group holds 1 to %d scenarios\n", GROUP_MAX);
        return 2;
    }
    const char *given = getenv("SMOKE_STATE_DIR");
    if (given && *given) {
        fprintf(stderr, "band-smoke-rehearsal: each scenario of a group needs a state folder of "
                        "its own; unset SMOKE_STATE_DIR\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    run_catch_stops(on_stop); /* under nohup the drivers inherit the ignore */
    member *m = calloc((size_t)n, sizeof *m);
    if (!m)
        abort();
    int64_t started = clock_mono_ms();
    if (jobs < 1 || jobs > n)
        jobs = n;
    printf("rehearsal group: %d scenarios, %d at once, each in a world of its own:", n, jobs);
    for (int i = 0; i < n; i++)
        printf(" %s", names[i]);
    printf("\n");
    for (int i = 0; i < n; i++) {
        m[i].name = names[i];
        m[i].fd = -1;
    }
    int shown = 0, left = n, next = 0;
    while (left > 0) {
        int running = 0;
        for (int i = 0; i < next; i++)
            running += !m[i].done;
        for (; next < n && running < jobs; next++, running++)
            launch(&m[next], next, argv, name_at);
        struct pollfd p[GROUP_MAX];
        int np = 0;
        for (int i = 0; i < n; i++)
            if (m[i].fd >= 0)
                p[np++] = (struct pollfd){m[i].fd, POLLIN, 0};
        poll(p, (nfds_t)np, 100);
        left = 0;
        for (int i = 0; i < n; i++) {
            if (m[i].fd >= 0)
                drain(&m[i]);
            reap(&m[i], i);
            left += !m[i].done;
        }
        while (shown < n && m[shown].done) {
            print_transcript(&m[shown], shown, n);
            shown++;
        }
    }
    int failed = 0, stopped = 0;
    printf("rehearsal group: %.1f s wall for %d scenarios\n",
           (clock_mono_ms() - started) / 1000.0, n);
    for (int i = 0; i < n; i++) {
        char own[256];
        own_count(&m[i], own, sizeof own);
        printf("  %-22s %-11s exit %3d  %5.1f s  %s\n", m[i].name, verdict(m[i].status),
               m[i].status, m[i].took_ms / 1000.0, own[0] ? own : "(no count: see above)");
        stopped += stop_signal && m[i].status >= 128;
        failed += m[i].status != 0;
        free(m[i].text);
    }
    free(m);
    printf("%d scenarios passed, %d failed, %d interrupted\n", n - failed, failed - stopped,
           stopped);
    if (stop_signal) {
        printf("rehearsal group: interrupted by %s; every driver was stopped\n",
               sig_name(stop_signal));
        return 128 + stop_signal;
    }
    return failed ? 1 : 0;
}
