/* sig: the stop-signal flag (issue 11 part 2): caught signals set it once
 * and the process lives on; an inherited ignored SIGINT (nohup) stays
 * ignored; the exit code is 128 + the signal; and `band-smoke rehearse`
 * under Ctrl-C. */
#include "sig.h"
#include "unit.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "tk.h"

static void restore_defaults(void)
{
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    sig_clear();
}

static void test_caught_signals_set_the_flag_once(void)
{
    restore_defaults();
    sig_install();
    CU_ASSERT_EQUAL(sig_pending(), 0);
    CU_ASSERT_EQUAL(sig_exit_code(), 0);
    raise(SIGTERM); /* the process would die here were it not caught */
    CU_ASSERT_EQUAL(sig_pending(), SIGTERM);
    raise(SIGHUP); /* the first signal is the one that counts */
    CU_ASSERT_EQUAL(sig_pending(), SIGTERM);
    CU_ASSERT_EQUAL(sig_exit_code(), 128 + SIGTERM);
    sig_clear();
    raise(SIGINT);
    CU_ASSERT_EQUAL(sig_exit_code(), 130);
    CU_ASSERT_STRING_EQUAL(sig_name(SIGINT), "SIGINT");
    CU_ASSERT_STRING_EQUAL(sig_name(SIGHUP), "SIGHUP");
    CU_ASSERT_STRING_EQUAL(sig_name(SIGUSR1), "a signal");
    restore_defaults();
}

static void test_inherited_ignore_stays(void)
{
    restore_defaults();
    signal(SIGINT, SIG_IGN); /* as nohup or `trap '' INT` leave it */
    sig_install();
    struct sigaction now;
    sigaction(SIGINT, NULL, &now);
    CU_ASSERT_TRUE(now.sa_handler == SIG_IGN);
    raise(SIGINT);
    CU_ASSERT_EQUAL(sig_pending(), 0);
    sigaction(SIGTERM, NULL, &now);
    CU_ASSERT_TRUE(now.sa_handler != SIG_IGN && now.sa_handler != SIG_DFL);
    CU_ASSERT_EQUAL(now.sa_flags & SA_RESTART, 0); /* blocked calls must wake up */
    restore_defaults();
}

/* Field 6 (session) of /proc/PID/stat, or -1. */
static long session_of(const char *pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%.32s/stat", pid);
    FILE *fp = fopen(path, "r");
    size_t n = fp ? fread(buf, 1, sizeof buf - 1, fp) : 0;
    if (fp)
        fclose(fp);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    long ppid = 0, pgrp = 0, sid = -1;
    char state;
    if (!p || sscanf(p + 1, " %c %ld %ld %ld", &state, &ppid, &pgrp, &sid) != 4 || state == 'Z')
        return -1;
    return sid;
}

static int left_in_session(pid_t sid)
{
    int n = 0;
    DIR *d = opendir("/proc");
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        n += e->d_name[0] >= '1' && e->d_name[0] <= '9' && session_of(e->d_name) == (long)sid;
    if (d)
        closedir(d);
    return n;
}

/* `band-smoke rehearse` and Ctrl-C, as a terminal sends it (SIGINT to the
 * whole foreground group): exit 130, one line saying so, no check noise,
 * and nothing it started still running. */
static void test_rehearse_ctrl_c(void)
{
    const char *bin = getenv("BAND_SMOKE");
    char *dir = tk_tmpdir("ctrlc");
    char *out = tk_path(dir, "out");
    pid_t pid = fork();
    if (pid == 0) {
        setsid();
        if (!freopen(out, "w", stdout) || dup2(fileno(stdout), 2) < 0)
            _exit(126);
        execl(bin, bin, "rehearse", "--scenario", "main", "--clean", (char *)NULL);
        _exit(127);
    }
    struct timespec into_it = {2, 0};
    nanosleep(&into_it, NULL);
    int64_t t0 = clock_mono_ms();
    kill(-pid, SIGINT);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    int64_t took = clock_mono_ms() - t0;
    int left = left_in_session(pid);
    for (int i = 0; i < 100 && left; i++) {
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
        left = left_in_session(pid);
    }
    char *text = tk_read(out, NULL);
    UNIT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status %d:\n%s", status,
               text ? text : "");
    UNIT_CHECK(took < 15000, "it took %lld ms to stop", (long long)took);
    UNIT_CHECK(text && strstr(text, "interrupted by SIGINT") && !strstr(text, "CHECK FAILED"),
               "what it printed:\n%s", text ? text : "");
    UNIT_CHECK(left == 0, "%d process(es) it started still run", left);
    if (left)
        kill(-pid, SIGKILL);
    free(text);
    tk_rmtree(dir);
    free(dir);
    free(out);
}

const unit_case unit_cases[] = {
    {"caught_signals_set_the_flag_once", test_caught_signals_set_the_flag_once},
    {"inherited_ignore_stays", test_inherited_ignore_stays},
    {"rehearse_ctrl_c", test_rehearse_ctrl_c},
    {NULL, NULL},
};
