/* policy: see policy.h. */
#include "policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "store.h"

/* The real `balanced` has about 193 rules; these are the ones a Python
 * agent's setup touches, which is what a test can observe. */
static const char *const balanced_rules[] = {
    "pypi.org",           "files.pythonhosted.org", "github.com",
    "**.github.com",      "objects.githubusercontent.com", "raw.githubusercontent.com",
    "astral.sh",          "registry.npmjs.org",     "deb.debian.org",
    "archive.ubuntu.com", "security.ubuntu.com",    "api.anthropic.com",
    "api.openai.com",
};
static const char *const allow_all_rules[] = {"**"};

static const char *const *builtin_list(const char *mode, int *n)
{
    *n = 0;
    if (mode && strcmp(mode, "balanced") == 0) {
        *n = (int)(sizeof balanced_rules / sizeof balanced_rules[0]);
        return balanced_rules;
    }
    if (mode && strcmp(mode, "allow-all") == 0) {
        *n = 1;
        return allow_all_rules;
    }
    return NULL;
}

int pol_builtin_count(const char *mode)
{
    int n;
    builtin_list(mode, &n);
    return n;
}

const char *pol_builtin(const char *mode, int i)
{
    int n;
    const char *const *list = builtin_list(mode, &n);
    return list && i >= 0 && i < n ? list[i] : NULL;
}

int pol_mode_valid(const char *mode)
{
    return mode && (!strcmp(mode, "allow-all") || !strcmp(mode, "balanced") ||
                    !strcmp(mode, "deny-all"));
}

/* Splits "host[:port]" of a resource: the host part's length, and the
 * port (0 when none). A trailing ":digits" is a port. */
static size_t split_port(const char *r, int *port)
{
    *port = 0;
    const char *colon = strrchr(r, ':');
    if (!colon || !colon[1])
        return strlen(r);
    for (const char *p = colon + 1; *p; p++)
        if (*p < '0' || *p > '9')
            return strlen(r);
    long v = strtol(colon + 1, NULL, 10);
    if (v <= 0 || v > 65535)
        return strlen(r);
    *port = (int)v;
    return (size_t)(colon - r);
}

int pol_resource_valid(const char *resource)
{
    int port;
    size_t n = split_port(resource, &port);
    if (n == 0 || strpbrk(resource, " \t,/"))
        return 0;
    if (resource[n] == ':' && port == 0)
        return 0;
    /* A wildcard only as a whole first label: "*.d", "**.d", "**". */
    const char *star = memchr(resource, '*', n);
    if (!star)
        return 1;
    if (n == 2 && !strncmp(resource, "**", 2))
        return 1;
    size_t lead = resource[1] == '*' ? 2 : 1;
    return star == resource && n > lead + 1 && resource[lead] == '.' &&
           !memchr(resource + lead, '*', n - lead);
}

/* host ends with ".suffix" (suffix being n bytes), ignoring case. */
static int below(const char *host, const char *suffix, size_t n)
{
    size_t h = strlen(host);
    return h > n + 1 && host[h - n - 1] == '.' && strncasecmp(host + h - n, suffix, n) == 0;
}

int pol_match(const char *resource, const char *host, int port)
{
    int want_port;
    size_t n = split_port(resource, &want_port);
    if (want_port && want_port != port)
        return 0;
    if (n == 2 && !strncmp(resource, "**", 2))
        return 1;
    if (n > 3 && !strncmp(resource, "**.", 3))
        return (strlen(host) == n - 3 && !strncasecmp(host, resource + 3, n - 3)) ||
               below(host, resource + 3, n - 3);
    if (n > 2 && !strncmp(resource, "*.", 2))
        return below(host, resource + 2, n - 2);
    return strlen(host) == n && strncasecmp(host, resource, n) == 0;
}

static int rule_applies(const cJSON *rule, const char *sandbox, const char *decision)
{
    const char *scope = store_str(rule, "scope");
    return strcmp(store_str(rule, "decision"), decision) == 0 &&
           (scope[0] == '\0' || (sandbox && strcmp(scope, sandbox) == 0));
}

/* The first rule of `decision` that matches, or NULL. */
static const char *find_rule(const cJSON *policy, const char *sandbox, const char *decision,
                             const char *host, int port)
{
    const cJSON *rule;
    cJSON_ArrayForEach(rule, cJSON_GetObjectItemCaseSensitive(policy, "rules")) {
        if (rule_applies(rule, sandbox, decision) &&
            pol_match(store_str(rule, "resource"), host, port))
            return store_str(rule, "resource");
    }
    return NULL;
}

void pol_decide(const cJSON *policy, const char *sandbox, const char *host, int port,
                pol_verdict *v)
{
    memset(v, 0, sizeof *v);
    const char *mode = store_str(policy, "mode");
    if (!pol_mode_valid(mode)) {
        snprintf(v->detail, sizeof v->detail, "network policy has not been initialized");
        return;
    }
    const char *deny = find_rule(policy, sandbox, "deny", host, port);
    if (deny) {
        snprintf(v->rule, sizeof v->rule, "%s", deny);
        snprintf(v->detail, sizeof v->detail, "matched deny rule \"%s\"", deny);
        return;
    }
    const char *allow = find_rule(policy, sandbox, "allow", host, port);
    for (int i = 0; !allow && i < pol_builtin_count(mode); i++)
        if (pol_match(pol_builtin(mode, i), host, port))
            allow = pol_builtin(mode, i);
    if (allow) {
        v->allowed = 1;
        snprintf(v->rule, sizeof v->rule, "%s", allow);
        snprintf(v->detail, sizeof v->detail, "matched allow rule \"%s\"", allow);
        return;
    }
    snprintf(v->detail, sizeof v->detail,
             "no matching allow rule \xe2\x80\x94 blocked by default deny policy");
}
