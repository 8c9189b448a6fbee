/* cmd_policy: `sbx policy ...` of the fake (reference/sbx-cli.md 3.10),
 * the rules as policy.h applies them. argv[0] is "policy".
 *
 *   init allow-all|balanced|deny-all   once; a second init is refused
 *   allow|deny network [--sandbox N] "r1,r2"   rules for every sandbox, or
 *        one (which must exist); a deny clashing with an allow is refused
 *        as sbx does (`conflicts with existing allow rule "<id>"`)
 *   rm network [--sandbox N] --resource R | --id ID
 *   ls [--json]                        `POLICY SOURCE APPLIES TO SUMMARY`
 *   log [NAME] [--json] [--limit N]    `Blocked requests:` / `Allowed
 *        requests:`, each a `SANDBOX TYPE HOST PROXY RULE REASON LAST SEEN
 *        COUNT` table of what the daemon's proxy actually saw
 *   check network [--sandbox N] [--json] TARGET   `Allowed: ...` exit 0 or
 *        `Denied: ...` exit 1; TARGET is host, host:port or a URL
 *   reset [-f]                         forgets every rule and stops the
 *        daemon (sandboxes stopped), refusing off a terminal without -f
 */
#ifndef FSBX_CMD_POLICY_H
#define FSBX_CMD_POLICY_H

#include "fsbx.h"

int cmd_policy(const fsbx *f, int argc, char **argv);

#endif
