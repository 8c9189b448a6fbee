#include "launcher.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agentlog.h"
#include "clock.h"
#include "platform.h"

static void note(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(int fd, const char *fmt, ...)
{
    char msg[512], err[ERR_BUFSZ];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    agentlog_note(fd, clock_wall_ms(NULL), "INFO", AGENTLOG_LAUNCHER, msg, err);
}

static void wait_quietly(int sig)
{
    (void)sig; /* the process group's signal reaches the program too */
}

static const int stop_signals[] = {SIGTERM, SIGINT, SIGHUP};

static void stop_signal_set(sigset_t *set)
{
    sigemptyset(set);
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++)
        sigaddset(set, stop_signals[i]);
}

static void catch_stop_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = wait_quietly;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++)
        sigaction(stop_signals[i], &sa, NULL);
}

/* The stop signals are blocked across the fork: one arriving between fork
 * and exec would otherwise meet the child's inherited catch-and-ignore
 * handler and be lost. The child restores the defaults, then unblocks. */
static pid_t start_program(char **argv, int log_fd)
{
    sigset_t stops, before;
    stop_signal_set(&stops);
    sigprocmask(SIG_BLOCK, &stops, &before);
    pid_t pid = fork();
    if (pid != 0) {
        sigprocmask(SIG_SETMASK, &before, NULL);
        return pid;
    }
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++)
        signal(stop_signals[i], SIG_DFL);
    sigprocmask(SIG_SETMASK, &before, NULL);
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0)
        dup2(null_fd, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    execvp(argv[0], argv);
    _exit(127);
}

static void describe_end(int status, char *buf, size_t cap)
{
    if (WIFEXITED(status))
        snprintf(buf, cap, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, cap, "killed by signal %d", WTERMSIG(status));
    else
        snprintf(buf, cap, "ended (status %d)", status);
}

int launcher_main(int argc, char **argv)
{
    const char *log_path = NULL, *generation = "?";
    int i = 0;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (!strcmp(argv[i], "--log") && i + 1 < argc)
            log_path = argv[++i];
        else if (!strcmp(argv[i], "--generation") && i + 1 < argc)
            generation = argv[++i];
        else
            return 2;
    }
    if (!log_path || i + 1 >= argc)
        return 2;
    char **program = argv + i + 1;

    int log_fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (log_fd < 0)
        return 1;
    /* The pair the launch records for this process: it ties every note
     * here to this incarnation (agentlog.h, "Launch identity"). */
    char me[AGENTLOG_LAUNCHER_ID_SZ];
    agentlog_launcher_id((long)getpid(), plat_proc_start_token(getpid()), me, sizeof me);
    catch_stop_signals();
    pid_t pid = start_program(program, log_fd);
    if (pid < 0) {
        note(log_fd, "%s cannot start %s: %s (launch generation %s, %s", AGENTLOG_EXIT_NOTE,
             program[0], strerror(errno), generation, me);
        return 1;
    }
    note(log_fd, "launch generation %s started %s (pid %d; %s", generation, program[0], (int)pid,
         me);

    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    char how[64];
    describe_end(status, how, sizeof how);
    note(log_fd, "%s %s (launch generation %s, %s", AGENTLOG_EXIT_NOTE, how, generation, me);
    close(log_fd);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
