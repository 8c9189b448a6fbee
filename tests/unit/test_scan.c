#define _DEFAULT_SOURCE /* realpath */
/* scan: the rehearsal's canary scanner finds what it exists to find. Every
 * rehearsal trusts its "0 hits"; these cases plant a key where the scanner
 * must see it, including in a process it had already read and skips. */
#include "scan.h"
#include "unit.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

/* A key no other process on the machine holds. */
static void fresh_key(char *out, size_t cap, const char *what)
{
    snprintf(out, cap, "canary-%s-%ld-%ld", what, (long)getpid(), (long)clock_mono_ms());
}

/* A child that waits for a byte on `go` (or its end) and then becomes
 * `sleep 30` with argv and env as given. Until then it is a fork of this
 * test: nothing of the key in its argv or environment. */
static pid_t child_then_exec(int *go, char *const argv[], char *const env[])
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[1]);
        char byte;
        if (read(fds[0], &byte, 1) < 0)
            _exit(1);
        execve("/bin/sleep", argv, env);
        _exit(127);
    }
    close(fds[0]);
    *go = fds[1];
    return pid;
}

static void release(int go)
{
    if (write(go, "x", 1) != 1)
        perror("release");
    close(go);
}

static void end_child(pid_t pid)
{
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
}

/* Until the scanner has finished n more sweeps (at most 10 s). */
static int sweeps_more(scan *s, long n)
{
    long until = scan_sweeps(s) + n;
    for (int64_t end = clock_mono_ms() + 10000; clock_mono_ms() < end;) {
        if (scan_sweeps(s) >= until)
            return 1;
        clock_sleep_ms(10);
    }
    return 0;
}

/* Until /proc/pid/exe is /bin/sleep's program (at most 10 s). */
static int execed(pid_t pid)
{
    char path[64], want[4096];
    snprintf(path, sizeof path, "%ld", (long)pid);
    if (!realpath("/bin/sleep", want))
        return 0;
    for (int64_t end = clock_mono_ms() + 10000; clock_mono_ms() < end; clock_sleep_ms(5))
        if (scan_proc_runs(path, want))
            return 1;
    return 0;
}

/* A child that is `sleep 30` with argv and env by the time this returns. */
static pid_t sleeping_with(char *const argv[], char *const env[])
{
    int go;
    pid_t pid = child_then_exec(&go, argv, env);
    if (pid > 0) {
        release(go);
        UNIT_CHECK(execed(pid), "the child became sleep");
    }
    return pid;
}

/* A scan that runs for n sweeps and stops. */
static void scan_for_sweeps(scan *s, long n)
{
    UNIT_CHECK(scan_start(s) == 0, "scan_start");
    UNIT_CHECK(sweeps_more(s, n), "%ld sweeps in 10 s", n);
    scan_stop(s);
}

static void test_environment_after_exec_is_searched(void)
{
    char key[96], entry[128];
    fresh_key(key, sizeof key, "env");
    snprintf(entry, sizeof entry, "LEAK=%s", key);
    char *argv[] = {"sleep", "30", NULL}, *env[] = {entry, NULL};
    scan s;
    scan_init(&s, key, "/nonexistent/agent");
    int go;
    pid_t pid = child_then_exec(&go, argv, env);
    UNIT_CHECK(pid > 0, "fork");
    UNIT_CHECK(scan_start(&s) == 0, "scan_start");
    UNIT_CHECK(sweeps_more(&s, 10), "ten sweeps in 10 s");
    UNIT_CHECK(s.hits == 0, "nothing before exec, yet: %s", s.first_hit);
    /* Read at most the new processes after the first sweep: the child,
     * already read, is among those skipped. */
    long searched = s.searched, skipped = s.skipped;
    UNIT_CHECK(skipped > searched, "%ld process images skipped, %ld read", skipped, searched);
    release(go);
    UNIT_CHECK(execed(pid), "the child became sleep");
    UNIT_CHECK(sweeps_more(&s, 3), "three more sweeps");
    scan_stop(&s);
    char where[64];
    snprintf(where, sizeof where, "the environment of pid %ld", (long)pid);
    UNIT_CHECK(s.hits >= 1 && strstr(s.first_hit, where), "found after exec: %d hits, %s",
               s.hits, s.first_hit);
    end_child(pid);
}

static void test_argv_is_searched(void)
{
    char key[96];
    fresh_key(key, sizeof key, "argv");
    char *argv[] = {key, "30", NULL}, *env[] = {NULL}; /* argv[0] is free text */
    scan s;
    scan_init(&s, key, "/nonexistent/agent");
    pid_t pid = sleeping_with(argv, env);
    scan_for_sweeps(&s, 2);
    char where[64];
    snprintf(where, sizeof where, "the argv of pid %ld", (long)pid);
    UNIT_CHECK(s.hits >= 1 && strstr(s.first_hit, where), "found in argv: %s", s.first_hit);
    end_child(pid);
}

/* An agent key is learnt while the run goes on: a process read before
 * then must be read again for it. */
static void test_key_added_later_is_searched_for(void)
{
    char user[96], agent[96], entry[128];
    fresh_key(user, sizeof user, "user");
    fresh_key(agent, sizeof agent, "agent");
    snprintf(entry, sizeof entry, "BAND_API_KEY=%s", agent);
    char *argv[] = {"sleep", "30", NULL}, *env[] = {entry, NULL};
    scan s;
    scan_init(&s, user, "/nonexistent/agent");
    pid_t pid = sleeping_with(argv, env);
    UNIT_CHECK(scan_start(&s) == 0, "scan_start");
    UNIT_CHECK(sweeps_more(&s, 3), "three sweeps");
    UNIT_CHECK(s.hits == 0, "the agent key is not known yet: %s", s.first_hit);
    scan_add_key(&s, agent);
    UNIT_CHECK(sweeps_more(&s, 2), "two sweeps after the key");
    scan_stop(&s);
    UNIT_CHECK(s.hits >= 1 && strstr(s.first_hit, "an agent key"), "found: %s", s.first_hit);
    end_child(pid);
}

/* The agent's own key in the agent program's environment is where it
 * belongs; the user key there is still a leak. */
static void test_agent_may_hold_only_its_own_key(void)
{
    char user[96], agent[96], entry[128], exe[4096];
    fresh_key(user, sizeof user, "user");
    fresh_key(agent, sizeof agent, "agent");
    UNIT_CHECK(realpath("/bin/sleep", exe) != NULL, "realpath /bin/sleep");
    snprintf(entry, sizeof entry, "BAND_API_KEY=%s", agent);
    char *argv[] = {"sleep", "30", NULL}, *env[] = {entry, NULL};
    scan s;
    scan_init(&s, user, exe);
    scan_add_key(&s, agent);
    pid_t pid = sleeping_with(argv, env);
    scan_for_sweeps(&s, 3);
    UNIT_CHECK(s.hits == 0, "the agent's own key is allowed: %s", s.first_hit);
    end_child(pid);

    snprintf(entry, sizeof entry, "BAND_API_KEY_USER=%s", user);
    pid = sleeping_with(argv, env);
    scan_for_sweeps(&s, 3);
    UNIT_CHECK(s.hits >= 1 && strstr(s.first_hit, "the canary user"), "user key: %s",
               s.first_hit);
    end_child(pid);
}

const unit_case unit_cases[] = {
    {"environment_after_exec_is_searched", test_environment_after_exec_is_searched},
    {"argv_is_searched", test_argv_is_searched},
    {"key_added_later_is_searched_for", test_key_added_later_is_searched_for},
    {"agent_may_hold_only_its_own_key", test_agent_may_hold_only_its_own_key},
    {NULL, NULL},
};
