/* policy: the fake's network policy, as its proxy and `policy check`
 * apply it (reference/sbx-cli.md sections 3.10 and 4).
 *
 * Resources: an exact host ("pypi.org", any port), host:port
 * ("127.0.0.1:8080"), "*.example.com" (any host below example.com),
 * "**.example.com" (example.com and any host below it), "**" (everything).
 * Host comparison ignores case. CIDR ranges are not modelled.
 *
 * Decision, as sbx does it: a matching deny rule wins; else a matching
 * allow rule (the mode's built-in ones, global rules, rules scoped to the
 * sandbox) allows; else default deny. Modes: allow-all = "**", balanced =
 * a small built-in list of package and code hosts, deny-all = nothing. An
 * uninitialised policy allows nothing.
 */
#ifndef FSBX_POLICY_H
#define FSBX_POLICY_H

#include <cjson/cJSON.h>

typedef struct pol_verdict {
    int allowed;
    char rule[300];  /* the resource that decided, "" for default deny */
    char detail[200]; /* the 403 body's detail line, and policy check's reason */
} pol_verdict;

/* True for allow-all, balanced, deny-all. */
int pol_mode_valid(const char *mode);

/* True for a resource this module understands (see above). */
int pol_resource_valid(const char *resource);

/* True when resource matches host:port. */
int pol_match(const char *resource, const char *host, int port);

/* Decides host:port for `sandbox` under the store's "policy" object. */
void pol_decide(const cJSON *policy, const char *sandbox, const char *host, int port,
                pol_verdict *v);

/* Number of built-in allow rules of a mode, and the i-th one. */
int pol_builtin_count(const char *mode);
const char *pol_builtin(const char *mode, int i);

#endif
