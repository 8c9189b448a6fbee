/* tk_wait: wait for a child process to end without sleeping through it.
 *
 * Tests start fakes, the stand-in agent and responders as children and
 * must wait for them to go, bounded. A loop of waitpid(WNOHANG) and naps
 * pays up to one nap per wait, and hundreds of waits add up; here the wait
 * ends when the child does: poll() on a pidfd (Linux 5.3+), or, where
 * there is none, waitpid with naps of a few milliseconds.
 */
#ifndef SMOKE_TK_WAIT_H
#define SMOKE_TK_WAIT_H

#include <sys/types.h>

/* Reaps child `pid` within timeout_ms (0 = only if it has already ended).
 * Returns its exit code, 128 + the signal that killed it, -1 when it is
 * still running at the deadline (not reaped), or -2 when pid is not a
 * child of this process (already reaped, or never ours). */
int tk_wait_child(pid_t pid, int timeout_ms);

#endif
