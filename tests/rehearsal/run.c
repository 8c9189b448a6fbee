#define _GNU_SOURCE /* pipe2 */
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

/* All output of all children, so the canary scan sees everything printed. */
static struct {
    char *text;
    size_t len, cap;
} transcript;

static void keep(const char *data, size_t len)
{
    if (transcript.len + len + 1 > transcript.cap) {
        transcript.cap = (transcript.len + len + 1) * 2;
        transcript.text = realloc(transcript.text, transcript.cap);
        if (!transcript.text)
            abort();
    }
    memcpy(transcript.text + transcript.len, data, len);
    transcript.len += len;
    transcript.text[transcript.len] = '\0';
}

const char *run_all_output(void)
{
    return transcript.text ? transcript.text : "";
}

/* The child run_child waits for now. It leads a process group of its own,
 * which a terminal's Ctrl-C does not reach, so the driver passes a stop
 * signal on to it (run_forward_signal, from a signal handler). */
static volatile sig_atomic_t foreground;

void run_forward_signal(int sig)
{
    pid_t group = (pid_t)foreground;
    if (group > 1)
        kill(-group, sig);
}

void run_catch_stops(void (*on_stop)(int))
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old, sa;
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_stop;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}

static pid_t spawn(world *w, char *const argv[], int out_fd)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    setpgid(0, 0);
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    dup2(null_fd, 0);
    dup2(out_fd, 1);
    dup2(out_fd, 2);
    execve(argv[0], argv, w->env);
    fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

static void print_lines(const char *prefix, char *pending, size_t *plen)
{
    char *start = pending, *nl;
    while ((nl = memchr(start, '\n', *plen - (size_t)(start - pending))) != NULL) {
        if (prefix)
            printf("%s%.*s\n", prefix, (int)(nl - start), start);
        start = nl + 1;
    }
    size_t rest = *plen - (size_t)(start - pending);
    memmove(pending, start, rest);
    *plen = rest;
}

int run_child(world *w, char *const argv[], int timeout_ms, const char *prefix, run_out *out)
{
    /* Close-on-exec, so only the child's stdout/stderr hold the pipe: a
     * detached grandchild (the launcher) must not keep it open. */
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        abort();
    fflush(stdout);
    pid_t pid = spawn(w, argv, fds[1]);
    foreground = (sig_atomic_t)pid;
    close(fds[1]);
    size_t cap = 4096, len = 0, plen = 0;
    char *text = malloc(cap), pending[8192];
    int64_t deadline = clock_mono_ms() + timeout_ms;
    int timed_out = 0;
    for (;;) {
        int64_t left = deadline - clock_mono_ms();
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        struct pollfd p = {fds[0], POLLIN, 0};
        if (poll(&p, 1, left > 500 ? 500 : (int)left) <= 0)
            continue;
        char buf[4096];
        ssize_t n = read(fds[0], buf, sizeof buf);
        if (n <= 0)
            break;
        if (len + (size_t)n + 1 > cap)
            text = realloc(text, cap = (len + (size_t)n + 1) * 2);
        memcpy(text + len, buf, (size_t)n);
        len += (size_t)n;
        keep(buf, (size_t)n);
        if (plen + (size_t)n > sizeof pending) { /* an endless line: show what we have */
            if (prefix)
                printf("%s%.*s\n", prefix, (int)plen, pending);
            plen = 0;
        }
        memcpy(pending + plen, buf, (size_t)n < sizeof pending ? (size_t)n : sizeof pending);
        plen += (size_t)n < sizeof pending ? (size_t)n : sizeof pending;
        print_lines(prefix, pending, &plen);
    }
    if (plen && prefix)
        printf("%s%.*s\n", prefix, (int)plen, pending);
    close(fds[0]);
    text[len] = '\0';
    int status = 0;
    if (timed_out)
        kill(-pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    foreground = 0;
    out->text = text;
    out->status = timed_out ? -1
                  : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return out->status;
}

int run_quiet(world *w, char *const argv[], int timeout_ms)
{
    run_out out;
    int status = run_child(w, argv, timeout_ms, NULL, &out);
    run_out_free(&out);
    return status;
}

int run_background(world *w, char *const argv[])
{
    int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    pid_t pid = spawn(w, argv, null_fd);
    close(null_fd);
    return (int)pid;
}

int run_reap(int pid, int timeout_ms)
{
    int64_t deadline = clock_mono_ms() + timeout_ms;
    int status = 0;
    while (clock_mono_ms() < deadline) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        struct timespec nap = {0, 10 * 1000000L};
        nanosleep(&nap, NULL);
    }
    kill(-pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

void run_out_free(run_out *out)
{
    free(out->text);
    out->text = NULL;
}
