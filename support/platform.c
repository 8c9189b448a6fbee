/* platform: Linux and macOS answers to what POSIX does not say.
 *
 * Darwin hides CLOCK_UPTIME_RAW and struct kinfo_proc when only
 * _POSIX_C_SOURCE is defined (as the build does); _DARWIN_C_SOURCE must be
 * set before the first system header to see them. glibc exposes
 * CLOCK_BOOTTIME under plain POSIX, so Linux needs nothing extra.
 */
#if defined(__APPLE__)
#define _DARWIN_C_SOURCE 1
#endif

#include "platform.h"

#include <sys/resource.h>
#include <time.h>

#if defined(__linux__)
#include <sys/prctl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#elif defined(__APPLE__)
#include <stdlib.h>
#include <string.h>
#include <sys/sysctl.h>
#include <unistd.h>
#else
#error "platform.c knows Linux and macOS only"
#endif

#if defined(__linux__)
#define PLAT_AWAKE_CLOCK CLOCK_MONOTONIC /* stops in suspend */
#define PLAT_TOTAL_CLOCK CLOCK_BOOTTIME  /* counts suspend too */
#else
#define PLAT_AWAKE_CLOCK CLOCK_UPTIME_RAW    /* stops in suspend */
#define PLAT_TOTAL_CLOCK CLOCK_MONOTONIC_RAW /* counts suspend too */
#endif

static int64_t clock_ms(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0)
        return 0; /* both ids exist on every supported kernel */
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t plat_awake_ms(void)
{
    return clock_ms(PLAT_AWAKE_CLOCK);
}

int64_t plat_total_ms(void)
{
    return clock_ms(PLAT_TOTAL_CLOCK);
}

/* What the kernel says about one process: its run state letter and its
 * start token. Returns 0 when there is no such process. */
typedef struct proc_facts {
    char state; /* 'Z' for a zombie, as in /proc; macOS mapped onto it */
    uint64_t start_token;
} proc_facts;

#if defined(__linux__)

/* /proc/PID/stat: "pid (comm) S ppid ... starttime ...". comm may hold
 * spaces and parentheses, so fields are counted from the last ')'. The
 * state is field 3 and starttime field 22 (proc(5)). */
#define STAT_STATE_FIELD 3
#define STAT_STARTTIME_FIELD 22

/* Up to cap bytes of /proc/PID/<name>, as they are (no NUL added); -1
 * when the file cannot be opened. */
static ssize_t read_proc_file(pid_t pid, const char *name, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/%s", (long)pid, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t used = 0;
    while (used < cap) {
        ssize_t n = read(fd, buf + used, cap - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        used += (size_t)n;
    }
    close(fd);
    return (ssize_t)used;
}

static int read_proc_stat(pid_t pid, char *buf, size_t cap)
{
    ssize_t used = read_proc_file(pid, "stat", buf, cap - 1);
    buf[used > 0 ? used : 0] = '\0';
    return used > 0;
}

static int proc_facts_of(pid_t pid, proc_facts *out)
{
    char buf[2048]; /* comm is at most 16 bytes; 52 numeric fields fit */
    if (pid <= 0 || !read_proc_stat(pid, buf, sizeof buf))
        return 0;
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    p++;
    int field = STAT_STATE_FIELD - 1; /* the ')' closes field 2 */
    while (*p) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        field++;
        if (field == STAT_STATE_FIELD) {
            out->state = *p;
        } else if (field == STAT_STARTTIME_FIELD) {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(p, &end, 10);
            if (errno != 0 || end == p)
                return 0;
            out->start_token = (uint64_t)v;
            return 1;
        }
        while (*p && *p != ' ')
            p++;
    }
    return 0; /* a stat line cut short: treat as unreadable */
}

#else /* __APPLE__ */

static int proc_facts_of(pid_t pid, proc_facts *out)
{
    if (pid <= 0)
        return 0;
    int mib[4] = {CTL_KERN, KERN_PROC, KERN_PROC_PID, (int)pid};
    struct kinfo_proc kp;
    size_t len = sizeof kp;
    /* A missing pid is not an error to sysctl: it returns length 0. */
    if (sysctl(mib, 4, &kp, &len, NULL, 0) != 0 || len == 0)
        return 0;
    const struct timeval *tv = &kp.kp_proc.p_starttime;
    out->state = kp.kp_proc.p_stat == SZOMB ? 'Z' : 'R';
    out->start_token = (uint64_t)tv->tv_sec * 1000000u + (uint64_t)tv->tv_usec;
    return 1;
}

#endif

uint64_t plat_proc_start_token(pid_t pid)
{
    proc_facts f = {0};
    return proc_facts_of(pid, &f) ? f.start_token : 0;
}

int plat_proc_alive(pid_t pid, uint64_t token)
{
    proc_facts f = {0};
    if (token == 0 || !proc_facts_of(pid, &f))
        return 0;
    /* 'X' (dead) can flash by on Linux between exit and reaping. */
    return f.state != 'Z' && f.state != 'X' && f.start_token == token;
}

#if defined(__linux__)

/* cmdline holds argv as NUL-terminated strings, back to back. */
static ssize_t read_parent_args(char *buf, size_t cap)
{
    return read_proc_file(getppid(), "cmdline", buf, cap);
}

#else /* __APPLE__ */

/* KERN_PROCARGS2: an int argc, the executable path, NUL padding, then argv
 * as NUL-terminated strings (then the environment, not copied). */
static ssize_t read_parent_args(char *buf, size_t cap)
{
    int mib[3] = {CTL_KERN, KERN_PROCARGS2, (int)getppid()};
    size_t size = 0;
    if (sysctl(mib, 3, NULL, &size, NULL, 0) != 0 || size <= sizeof(int))
        return -1;
    char *all = malloc(size);
    if (!all)
        return -1;
    if (sysctl(mib, 3, all, &size, NULL, 0) != 0 || size <= sizeof(int)) {
        free(all);
        return -1;
    }
    int argc;
    memcpy(&argc, all, sizeof argc);
    size_t at = sizeof argc;
    while (at < size && all[at])
        at++; /* the executable path */
    while (at < size && !all[at])
        at++; /* its padding */
    size_t len = 0;
    for (int i = 0; i < argc && at < size; i++) {
        size_t n = strnlen(all + at, size - at);
        if (len + n + 1 > cap)
            break;
        memcpy(buf + len, all + at, n);
        buf[len + n] = '\0';
        len += n + 1;
        at += n + 1;
    }
    free(all);
    return (ssize_t)len;
}

#endif

int plat_parent_argv(char *buf, size_t cap)
{
    if (!buf || cap < 2)
        return -1;
    ssize_t len = read_parent_args(buf, cap - 1);
    if (len < 0)
        return -1;
    buf[len] = '\0';
    if (len > 0 && buf[len - 1] != '\0')
        buf[len++] = '\0'; /* cut mid-string: end it */
    int count = 0;
    for (ssize_t i = 0; i < len; i++)
        count += buf[i] == '\0';
    return count;
}

int plat_harden_process(void)
{
    struct rlimit none = {0, 0};
    int rc = setrlimit(RLIMIT_CORE, &none);
#if defined(__linux__)
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
#endif
    return rc;
}
