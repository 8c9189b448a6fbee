#include "tk_run.h"

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

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void apply_env(char *const env[])
{
    for (int i = 0; env && env[i]; i++) {
        const char *eq = strchr(env[i], '=');
        if (!eq)
            continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(eq - env[i]), env[i]);
        if (eq[1])
            setenv(name, eq + 1, 1);
        else
            unsetenv(name);
    }
}

void tk_run(char *const argv[], char *const env[], int timeout_ms, tk_result *out)
{
    int fds[2];
    if (pipe(fds) != 0)
        abort();
    pid_t pid = fork();
    if (pid < 0)
        abort();
    if (pid == 0) {
        setpgid(0, 0);
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, 0);
        apply_env(env);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    size_t cap = 8192, len = 0;
    char *buf = malloc(cap);
    long deadline = now_ms() + timeout_ms;
    int timed_out = 0;
    for (;;) {
        long left = deadline - now_ms();
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        struct pollfd p = {fds[0], POLLIN, 0};
        int r = poll(&p, 1, (int)(left > 1000 ? 1000 : left));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue;
        if (len + 4096 > cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
        ssize_t n = read(fds[0], buf + len, cap - len - 1);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fds[0]);
    buf[len] = '\0';
    int status = 0;
    if (timed_out) {
        kill(-pid, SIGKILL);
        waitpid(pid, &status, 0);
        out->status = -1;
    } else {
        waitpid(pid, &status, 0);
        out->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    out->output = buf;
}

void tk_result_free(tk_result *r)
{
    free(r->output);
    r->output = NULL;
}

int tk_smoke(char *const env[], tk_result *out, const char *a, const char *b, const char *c)
{
    const char *bin = getenv("BAND_SMOKE");
    char *argv[] = {(char *)(bin && *bin ? bin : SMOKE_BINARY_DIR "/band-smoke"), (char *)a,
                    (char *)b, (char *)c, NULL};
    tk_run(argv, env, 60000, out);
    return out->status;
}
