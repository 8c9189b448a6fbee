/* cmd_exec: `sbx exec [-d] [-e K=V]... [--env-file F]... [-i] [-t] [-u U]
 * [-w|--workdir DIR] NAME CMD [ARG...]`, run on this host as if inside the
 * sandbox.
 *
 * Unknown sandbox: sbx's `ERROR: no sandbox named 'NAME'` block, exit 1. A
 * stopped sandbox is started first. CMD runs without a shell (execvp), in
 * DIR or else the sandbox's primary workspace (its home when it has none),
 * stdin /dev/null unless -i, in its own process group, with an environment
 * modelled on the sandbox's and nothing else of the caller's:
 *   PATH     the fake's own folder first (so `uv` is the fake uv), then
 *            /usr/local/bin:/usr/bin:/bin
 *   HOME     the sandbox's home folder; USER=agent; TERM only with -t
 *   FAKE_SBX_*, FAKE_UV_* and FAKE_AGENT_* of the caller (the fakes' own
 *   controls), and SMOKE_TIME_SCALE (the rehearsal's one time knob)
 *   SSL_CERT_FILE and SMOKE_CA_FILE = FAKE_SBX_CA_FILE when that is set:
 *            the TLS world's CA, trusted by the sandbox image (Python
 *            reads the first, the C stand-in the second)
 *   --env-file files, then -e values, in order (later wins; `-e K` and a
 *            bare `K` line take the caller's K)
 *   HTTP_PROXY, HTTPS_PROXY, http_proxy, https_proxy =
 *            http://127.0.0.1:<this sandbox's proxy port>, and
 *   NO_PROXY, no_proxy = gateway.docker.internal, set last so nothing
 *            overrides them.
 * Why NO_PROXY differs from the real sandbox's
 * (`localhost,127.0.0.1,::1,gateway.docker.internal`): inside a real
 * sandbox 127.0.0.1 is the VM itself, so exempting it costs nothing, and
 * even traffic that ignores the proxy variables is intercepted
 * transparently. In the fake, 127.0.0.1 is the host, where the fake Band
 * server listens: exempting it would let the agent bypass the proxy that
 * the real sandbox forces on it. Every connection must cross the proxy so
 * the policy, the net-cut and the freeze apply to it.
 *
 * The command's exit status is returned verbatim. The session (the
 * command's process group) is registered in the store before the command
 * starts, so `daemon stop` and `stop NAME` can end it and the freeze fault
 * can stop it. SIGTERM, SIGINT and SIGHUP sent to this exec process are
 * passed on to the command's group. When the sandbox is stopped during the
 * session (`daemon stop`, `stop NAME`), exec reports a lost session however
 * the command ended: an ERROR line and exit 1. A command killed otherwise
 * gives 128 + signal; one that cannot be started 127 (not found) or 126,
 * like docker exec.
 *
 * -d starts the command in its own session with output appended to the
 * state's detached.log, registers it, and returns 0 at once. -u and
 * --privileged are accepted and ignored.
 */
#ifndef FSBX_CMD_EXEC_H
#define FSBX_CMD_EXEC_H

#include "fsbx.h"

/* argv[0] is "exec". Returns the exit status. */
int cmd_exec(const fsbx *f, int argc, char **argv);

#endif
