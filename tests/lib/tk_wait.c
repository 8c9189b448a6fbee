/* syscall(2) for pidfd_open is not POSIX: tests may use Linux (HACKING.md). */
#ifdef __linux__
#define _DEFAULT_SOURCE
#endif
#include "tk_wait.h"

#include <errno.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NAP_MS 2 /* the fallback's poll interval, where there is no pidfd */

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* waitpid(WNOHANG): the status as tk_wait_child returns it, -1 running, -2 not ours. */
static int reap(pid_t pid)
{
    int status;
    pid_t got;
    while ((got = waitpid(pid, &status, WNOHANG)) < 0 && errno == EINTR)
        ;
    if (got == pid)
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return got == 0 ? -1 : -2;
}

/* A descriptor that becomes readable when pid ends; -1 when the kernel has none. */
static int pidfd_for(pid_t pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    return -1;
#endif
}

int tk_wait_child(pid_t pid, int timeout_ms)
{
    int status = reap(pid);
    if (status != -1 || timeout_ms <= 0)
        return status;
    long deadline = now_ms() + timeout_ms;
    int fd = pidfd_for(pid);
    for (;;) {
        long left = deadline - now_ms();
        if (left <= 0)
            break;
        if (fd >= 0) {
            struct pollfd p = {fd, POLLIN, 0};
            poll(&p, 1, (int)left);
        } else {
            struct timespec ts = {0, NAP_MS * 1000000L};
            nanosleep(&ts, NULL);
        }
        if ((status = reap(pid)) != -1)
            break;
    }
    if (fd >= 0)
        close(fd);
    return status == -1 ? reap(pid) : status;
}
