/* cmd_daemon: `sbx version` and `sbx daemon ...` of the fake, with the
 * outputs of reference/sbx-cli.md 3.1 and 3.9. argv[0] is the command.
 *
 *   version [--json]   `sbx version: v0.45.1 <40 hex>` (FAKE_SBX_VERSION
 *                      changes the version); FAKE_SBX_LEGACY_VERSION=1 gives
 *                      the two-line `Client Version:` / `Server Version:`
 *                      form of v0.31 and older. Never starts the daemon.
 *   daemon start [-d] [--policy MODE]   -d: start detached and return;
 *                      without: run in the foreground, logging to stdout,
 *                      until stopped. `Daemon is already running at SOCK`.
 *   daemon stop        every sandbox stopped, every exec session ended, the
 *                      daemon (and its proxy) gone: `Stopping daemon at
 *                      SOCK...` / `✓ Daemon stopped successfully`
 *   daemon restart     stop, then start -d
 *   daemon status [--json]   `Status: running` / `Socket: SOCK`, or
 *                      `Status: stopped` / `Socket: SOCK (not connected)`
 *   daemon log-level   accepted, no effect
 */
#ifndef FSBX_CMD_DAEMON_H
#define FSBX_CMD_DAEMON_H

#include "fsbx.h"

int cmd_version(const fsbx *f, int argc, char **argv);
int cmd_daemon(const fsbx *f, int argc, char **argv);

/* `sbx __daemon`: the detached daemon process itself. */
int cmd_daemon_process(const fsbx *f, int argc, char **argv);

#endif
