/* launcher: `band-smoke _launcher --log FILE --generation N -- PROGRAM ARGS...`
 *
 * The detached process that holds the agent's `sbx exec` session. The
 * launch phase starts it with proc_launch_detached (its own session, so it
 * outlives the phase) and records its pid and start token as the agent's
 * identity. It runs PROGRAM with stdin from /dev/null and stdout+stderr
 * appended to FILE (agent.log), notes that it started it, waits for it,
 * and then appends one note in the SDK's log format saying how it ended:
 *
 *   2026-12-02 12:00:00,000 INFO band_smoke.launcher: launch generation 2
 *       started sbx (pid 4242; launcher 4241@1733140800123)
 *   2026-12-02 12:05:00,000 INFO band_smoke.launcher: agent process ended:
 *       exited with status 137 (launch generation 2, launcher 4241@1733140800123)
 *
 * Every note names the launcher's own pid and start token (agentlog.h,
 * "Launch identity"): the generation alone is not unique, because a launch
 * SIGKILLed before it recorded its launcher leaves one running under the
 * number the next launch reuses.
 *
 * SIGTERM/SIGINT/SIGHUP to the launcher are caught (not ignored, so PROGRAM
 * keeps the default dispositions) and only make it wait for PROGRAM, which
 * the same signal to the process group ends; the note is written either
 * way. Internal: not part of the documented command line.
 */
#ifndef SMOKE_LAUNCHER_H
#define SMOKE_LAUNCHER_H

/* Runs the launcher; returns PROGRAM's exit status (128 + signal when it was
 * killed), 2 for bad arguments, 1 when PROGRAM could not be started. */
int launcher_main(int argc, char **argv);

#endif
