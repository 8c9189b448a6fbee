/* cmd_fault: the fake's hidden fault controls, and the hang they cause.
 *
 *   sbx _fault net-cut SECONDS   the Wi-Fi cycle: the daemon drops every
 *                                tunnel at once and, for SECONDS, closes
 *                                each new proxy client right after accept
 *   sbx _fault stall SECONDS     a network blip: every tunnel stops moving
 *                                bytes but stays open, processes run on
 *   sbx _fault freeze SECONDS    the host sleep: every exec session's
 *                                process group gets SIGSTOP and every tunnel
 *                                stalls, then SIGCONT and service resumes
 *   sbx _fault hang CMD          later invocations of CMD ("ls", or two
 *                                words: "daemon stop") hang until
 *                                `sbx _fault hang off`: sbx's wedged daemon
 *   sbx _fault vanish NAME       NAME disappears from every command (the
 *                                sleep bug of sbx-cli.md section 5) until
 *                                `sbx _fault vanish off`
 *   sbx _ps                      what still runs: `daemon PID` and
 *                                `session PGID SANDBOX` lines (teardown)
 * net-cut, stall and freeze need the daemon and return as soon as the fault is in
 * place; the daemon ends it by itself. SECONDS may be fractional.
 * FAKE_SBX_HANG=CMD in the environment hangs that one invocation instead.
 * A hang lasts at most FAKE_SBX_HANG_MAX_S seconds (default 600), so a
 * test that forgets its hanging child leaves nothing behind for long.
 */
#ifndef FSBX_CMD_FAULT_H
#define FSBX_CMD_FAULT_H

#include "fsbx.h"

int cmd_fault(const fsbx *f, int argc, char **argv);
int cmd_ps(const fsbx *f, int argc, char **argv);

/* Hangs when this invocation (argv[0] = the command) is told to; returns
 * at once otherwise. Returns 0 to go on, or an exit status (the bound
 * passed). */
int fault_hang_if_asked(const fsbx *f, int argc, char **argv);

#endif
