/* sandboxd: the fake sbx daemon itself, a single-threaded poll loop.
 *
 * It serves the control socket (ctl.h), one proxy listener on 127.0.0.1
 * per running sandbox (opened by `open NAME`; a listener per sandbox is how
 * the proxy knows whose policy applies, where the real daemon knows each
 * VM's own network), and the proxy's connections (proxy.h). It also holds
 * the two timed faults, because they must end by themselves after the
 * caller has gone:
 * - net-cut: every tunnel dropped at once, then for N seconds each new
 *   client is closed right after accept; then normal again (a Wi-Fi cycle);
 * - freeze: every exec session's process group gets SIGSTOP and no socket
 *   is served for N seconds, then SIGCONT and service resumes (a host sleep
 *   as the sandbox sees it).
 * It exits on `stop`, or by itself when its state folder disappears (a
 * test that died without tearing down must not leave it behind).
 */
#ifndef FSBX_SANDBOXD_H
#define FSBX_SANDBOXD_H

#include <stdio.h>

#include "fsbx.h"

/* Runs the daemon until it is told to stop; its log lines (JSON, one per
 * line, as sandboxd writes them) go to log. Returns the exit status. */
int sandboxd_run(const fsbx *f, FILE *log);

#endif
