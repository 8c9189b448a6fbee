/* ctl: how the fake CLI talks to its daemon: a Unix socket in the state
 * folder, one request line, one reply line, then close.
 *
 * Requests (the daemon's side is in sandboxd.c):
 *   ping               -> "pong PID"
 *   open NAME          -> "port N": the proxy port of sandbox NAME (opened
 *                         on first use; one listener per sandbox, so the
 *                         proxy knows whose policy applies)
 *   close NAME         -> "ok": closes NAME's listener and its tunnels
 *   net-cut SECONDS    -> "ok": drop every tunnel, refuse for SECONDS
 *   freeze SECONDS     -> "ok": SIGSTOP sessions, stall tunnels for SECONDS
 *   stop               -> "ok": the daemon exits
 * A failure reply starts with "error ".
 */
#ifndef FSBX_CTL_H
#define FSBX_CTL_H

#include <stddef.h>

#include "err.h"

#define CTL_LINE_MAX 512
#define CTL_WAIT_MS 3000 /* bound of one request, both ways */

/* Sends `line` and reads the reply into reply (cap bytes, no newline).
 * ERR_NETWORK when nobody listens, ERR_TIMEOUT when the daemon does not
 * answer in CTL_WAIT_MS, ERR_PROTOCOL when the reply starts with "error". */
err_code ctl_request(const char *sock, const char *line, char *reply, size_t cap, char *err);

/* True when a daemon answers ping on sock; its pid into *pid (may be NULL). */
int ctl_alive(const char *sock, long *pid);

/* The daemon side: a listening socket at sock (a stale file there is
 * replaced, so only call it when ctl_alive said no). Returns the fd, or -1
 * with err filled. */
int ctl_listen(const char *sock, char *err);

/* Accepts one client on lfd and reads its request line (bounded by
 * CTL_WAIT_MS). Returns the client fd (answer with ctl_reply), or -1 when
 * nothing usable came. */
int ctl_accept(int lfd, char *line, size_t cap);

/* Writes reply + "\n" to a client from ctl_accept and closes it. */
void ctl_reply(int fd, const char *reply);

#endif
