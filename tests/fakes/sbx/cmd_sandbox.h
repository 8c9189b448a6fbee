/* cmd_sandbox: the sandbox lifecycle commands of the fake sbx. Each takes
 * argv from its own name (argv[0] = "ls", ...) and returns the exit status.
 *
 *   ls [--json] [-q]   table `SANDBOX AGENT STATUS PORTS WORKSPACE`, or
 *                      `No sandboxes found.` + `Launch one: sbx run claude`;
 *                      -q names only; --json pretty-printed with two-space
 *                      indent: {"sandboxes": [{name, id, agent, status,
 *                      workspaces, created_at, last_used_at}]}
 *                      (FAKE_SBX_NO_ID=1 drops id, FAKE_SBX_EXTRA_FIELDS=1
 *                      adds fields a parser must ignore). `list` is an alias.
 *   create [--name N] [flags] AGENT [PATH[:ro]...]   needs an initialised
 *                      policy (else sbx's `global network policy has not
 *                      been initialized` block); a taken name is sbx's 409;
 *                      prints `✓ Created sandbox N`; status running. The
 *                      default name is AGENT-<last path component>.
 *   stop NAME...       ends the sandbox's sessions and proxy; status stopped
 *   rm [-f|--force] [--all] NAME...   without --force, and stdin not a
 *                      terminal, refuses as sbx does; with a terminal, asks
 *   reset [-f]         stops everything, wipes all state (sbx's summary)
 * Vanished sandboxes (the vanish fault) are invisible to all of them.
 */
#ifndef FSBX_CMD_SANDBOX_H
#define FSBX_CMD_SANDBOX_H

#include "fsbx.h"

int cmd_ls(const fsbx *f, int argc, char **argv);
int cmd_create(const fsbx *f, int argc, char **argv);
int cmd_stop(const fsbx *f, int argc, char **argv);
int cmd_rm(const fsbx *f, int argc, char **argv);
int cmd_reset(const fsbx *f, int argc, char **argv);

/* Asks `question [y/N] ` on a terminal. 1 = yes. 0 = no, or stdin is not a
 * terminal (then sbx refuses; see cmd_rm). */
int cmd_confirm(const char *question);

#endif
