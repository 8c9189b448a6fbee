/* daemon: the fake CLI's side of the daemon's life (the daemon itself is
 * sandboxd.h): is it up, start it, stop it, and end exec sessions.
 *
 * Starting runs `sbx __daemon` detached (proc_launch_detached: its own
 * session, output appended to daemon.log) and waits until it answers on
 * the control socket. Starts are serialised by a lock so two CLI calls
 * that both find it down cannot start two daemons.
 *
 * Stopping follows sbx's conservative model (sbx-cli.md 3.9): every
 * sandbox is marked stopped first, then every exec session's process group
 * is ended, then the daemon (with its proxy, so every tunnel drops). The
 * order matters: an exec whose command dies can then tell, from the store,
 * that its sandbox was stopped under it.
 */
#ifndef FSBX_DAEMON_H
#define FSBX_DAEMON_H

#include "err.h"
#include "fsbx.h"

#define DAEMON_START_WAIT_MS 5000
#define DAEMON_STOP_WAIT_MS 5000
#define SESSION_GRACE_MS 1000 /* SIGTERM -> SIGKILL for exec sessions */

/* True when the daemon answers; its pid into *pid (may be NULL). */
int daemon_up(const fsbx *f, long *pid);

/* Starts the daemon unless it runs; *started tells which (may be NULL),
 * *pid its pid. ERR_PROCESS when it does not come up in time. */
err_code daemon_start(const fsbx *f, int *started, long *pid, char *err);

/* The auto-start of ordinary commands: starts the daemon when it is down
 * and prints the three banner lines (stderr, or stdout when
 * FAKE_SBX_BANNER_STDOUT=1). Prints sbx's own error and returns 1 when it
 * cannot; 0 otherwise. */
int daemon_autostart(const fsbx *f);

/* Marks every sandbox stopped, ends every exec session, stops the daemon.
 * *was_up tells whether a daemon was running (may be NULL); *stopped the
 * number of sandboxes that were running (may be NULL). */
err_code daemon_stop(const fsbx *f, int *was_up, int *stopped, char *err);

/* Ends the exec sessions of one sandbox (NULL: of all). */
err_code daemon_end_sessions(const fsbx *f, const char *sandbox, char *err);

/* The proxy port of sandbox `name`, opening its listener if needed. */
err_code daemon_proxy_port(const fsbx *f, const char *name, int *port, char *err);

/* Closes sandbox `name`'s listener and tunnels (quietly: the daemon may be down). */
void daemon_proxy_close(const fsbx *f, const char *name);

#endif
