/* sig: see sig.h. */
#include "sig.h"

#include <signal.h>
#include <string.h>

static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};

/* The documented exception to "no hidden global state" (sig.h). */
static volatile sig_atomic_t pending;

static void on_stop_signal(int sig)
{
    if (!pending)
        pending = sig;
}

void sig_install(void)
{
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++) {
        struct sigaction old;
        if (sigaction(stop_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_stop_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = 0; /* no SA_RESTART: a blocked call must wake up */
        sigaction(stop_signals[i], &sa, NULL);
    }
}

int sig_pending(void)
{
    return (int)pending;
}

int sig_exit_code(void)
{
    return pending ? 128 + (int)pending : 0;
}

const char *sig_name(int sig)
{
    switch (sig) {
    case SIGINT:
        return "SIGINT";
    case SIGTERM:
        return "SIGTERM";
    case SIGHUP:
        return "SIGHUP";
    default:
        return "a signal";
    }
}

void sig_clear(void)
{
    pending = 0;
}

void sig_raise_flag(int sig)
{
    pending = sig;
}
