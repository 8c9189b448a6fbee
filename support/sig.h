/* sig: the stop signals (SIGINT, SIGTERM, SIGHUP) as a flag every bounded
 * wait can look at.
 *
 * The one exception to "no hidden global state": a signal handler can do
 * nothing safely but set a volatile sig_atomic_t, so the signal that asked
 * us to stop lives in this module's one static flag. Everything else stays
 * explicit: a waiting loop (proc_run, the readiness wait, the probe waits,
 * the HTTP progress hook) asks sig_pending() and, when it is set, ends what
 * it started (the child's whole process group) and returns ERR_INTERRUPTED;
 * the engine records the phase as interrupted and band-smoke exits
 * 128 + the signal.
 *
 * The handler is installed without SA_RESTART, so a blocking call returns
 * EINTR and its loop gets to look at the flag. A signal that was ignored
 * when band-smoke started (nohup, `trap '' INT`) stays ignored: the
 * operator asked for that.
 */
#ifndef SMOKE_SIG_H
#define SMOKE_SIG_H

/* Catches SIGINT, SIGTERM and SIGHUP (each unless inherited ignored). */
void sig_install(void);

/* The stop signal received since install (the first one), or 0. */
int sig_pending(void);

/* 128 + the pending signal (the shell's convention), or 0 when none. */
int sig_exit_code(void);

/* "SIGINT", "SIGTERM", "SIGHUP", else "a signal". Never NULL. */
const char *sig_name(int sig);

/* Forgets a pending signal: for a process that handled it and goes on (the
 * tests, the rehearsal driver between its own steps). */
void sig_clear(void);

/* Sets the flag as the handler would: for tests that cannot send a real
 * signal at the right instant. */
void sig_raise_flag(int sig);

#endif
