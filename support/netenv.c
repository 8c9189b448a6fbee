#include "netenv.h"
#include "url.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

/* Where a URL points, as far as the proxy decision cares. */
typedef struct endpoint {
    int secure;
    char host[256]; /* lowercase; IPv6 without brackets */
    int port;
} endpoint;

/* The pieces of `[userinfo@]host[:port]`, pointing into the parsed text. */
typedef struct authority {
    const char *user;  /* NULL when absent */
    size_t user_len;
    const char *host;
    size_t host_len;
    const char *port;  /* NULL when absent */
    size_t port_len;
    const char *rest;  /* first byte after the authority */
} authority;

/* An IP address in binary, for comparing textual forms ("::1" and
 * "0:0::1" are the same host). */
typedef struct ipaddr {
    int family; /* 0 = not an IP literal */
    unsigned char bytes[16];
} ipaddr;

static const char *const SECURE_VARS[] = {"https_proxy", "HTTPS_PROXY", "all_proxy",
                                          "ALL_PROXY", NULL};
static const char *const PLAIN_VARS[] = {"http_proxy", "HTTP_PROXY", "all_proxy",
                                         "ALL_PROXY", NULL};
static const char *const NO_PROXY_VARS[] = {"no_proxy", "NO_PROXY", NULL};

static const char *getenv_lookup(const char *name, void *ud)
{
    (void)ud;
    return getenv(name);
}

err_code netenv_proxy_for(const char *url, netenv_proxy *out, char *err)
{
    return netenv_proxy_for_env(url, getenv_lookup, NULL, out, err);
}

/* ---- small parsers ------------------------------------------------------ */

/* Copies a host name lowercased; refuses what no host name holds. */
static int copy_host(char *dst, size_t cap, const char *src, size_t n)
{
    if (n == 0 || n >= cap)
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)src[i];
        if (ch <= ' ' || ch >= 0x7f || strchr("/?#@[]\\", ch))
            return -1;
        dst[i] = (char)(ch >= 'A' && ch <= 'Z' ? ch + ('a' - 'A') : ch);
    }
    dst[n] = '\0';
    return 0;
}

static ipaddr ip_parse(const char *host)
{
    ipaddr ip = {0};
    if (inet_pton(AF_INET, host, ip.bytes) == 1)
        ip.family = AF_INET;
    else if (inet_pton(AF_INET6, host, ip.bytes) == 1)
        ip.family = AF_INET6;
    return ip;
}

static int ip_len(const ipaddr *ip)
{
    return ip->family == AF_INET ? 4 : 16;
}

/* Splits "[user@]host[:port]" up to the first '/', '?' or '#'. IPv6 hosts
 * must be bracketed, as in any URL. Returns -1 when malformed. */
static int split_authority(const char *s, authority *a)
{
    memset(a, 0, sizeof *a);
    size_t end = strcspn(s, "/?#");
    a->rest = s + end;
    const char *hp = s;
    for (const char *p = s + end; p > s; p--) {
        if (p[-1] == '@') {
            a->user = s;
            a->user_len = (size_t)(p - 1 - s);
            hp = p;
            break;
        }
    }
    const char *stop = s + end;
    const char *colon;
    if (*hp == '[') {
        const char *close = memchr(hp, ']', (size_t)(stop - hp));
        if (!close)
            return -1;
        a->host = hp + 1;
        a->host_len = (size_t)(close - hp - 1);
        colon = close + 1 < stop ? close + 1 : NULL;
        if (colon && *colon != ':')
            return -1;
    } else {
        colon = memchr(hp, ':', (size_t)(stop - hp));
        a->host = hp;
        a->host_len = (size_t)((colon ? colon : stop) - hp);
        if (colon && memchr(colon + 1, ':', (size_t)(stop - colon - 1)))
            return -1;
    }
    if (colon) {
        a->port = colon + 1;
        a->port_len = (size_t)(stop - colon - 1);
    }
    return a->host_len ? 0 : -1;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Percent-decodes credentials: a proxy URL must encode '@' and ':' in
 * them, while both consumers (lws, libcurl) want the plain text. */
static int decode_userinfo(char *dst, size_t cap, const char *src, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int ch = (unsigned char)src[i];
        if (ch == '%') {
            int hi = i + 2 < n ? hexval(src[i + 1]) : -1;
            int lo = i + 2 < n ? hexval(src[i + 2]) : -1;
            if (hi < 0 || lo < 0)
                return -1;
            ch = hi * 16 + lo;
            i += 2;
        }
        if (ch == 0 || o + 1 >= cap)
            return -1;
        dst[o++] = (char)ch;
    }
    dst[o] = '\0';
    return 0;
}

/* ---- the URL being connected to ----------------------------------------- */

static err_code parse_endpoint(const char *url, endpoint *ep, char *err)
{
    static const struct {
        const char *scheme;
        int secure;
    } schemes[] = {{"http", 0}, {"ws", 0}, {"https", 1}, {"wss", 1}};

    memset(ep, 0, sizeof *ep);
    const char *sep = strstr(url, "://");
    int known = 0;
    for (size_t i = 0; sep && i < sizeof schemes / sizeof schemes[0]; i++) {
        size_t n = strlen(schemes[i].scheme);
        if ((size_t)(sep - url) == n && strncasecmp(url, schemes[i].scheme, n) == 0) {
            ep->secure = schemes[i].secure;
            known = 1;
        }
    }
    if (!known)
        return err_set(err, ERR_USAGE, "not an http(s) or ws(s) URL");
    authority a;
    if (split_authority(sep + 3, &a) != 0 ||
        copy_host(ep->host, sizeof ep->host, a.host, a.host_len) != 0)
        return err_set(err, ERR_USAGE, "URL has no usable host");
    ep->port = ep->secure ? 443 : 80;
    if (a.port && url_parse_port(a.port, a.port_len, &ep->port) != 0)
        return err_set(err, ERR_USAGE, "URL has a malformed port");
    return ERR_OK;
}

/* ---- the proxy variables ------------------------------------------------ */

static const char *first_set(const char *(*lookup)(const char *, void *), void *ud,
                             const char *const *names, const char **which)
{
    for (; *names; names++) {
        const char *v = lookup(*names, ud);
        if (v && *v) {
            *which = *names;
            return v;
        }
    }
    return NULL;
}

static err_code parse_proxy(const char *var, const char *value, netenv_proxy *out,
                            char *err)
{
    memset(out, 0, sizeof *out);
    const char *p = value;
    const char *sep = strstr(value, "://");
    if (sep) {
        if (sep - value != 4 || strncasecmp(value, "http", 4) != 0)
            return err_set(err, ERR_CONFIG, "%s: only http:// proxies are supported", var);
        p = sep + 3;
    }
    authority a;
    if (split_authority(p, &a) != 0 || !a.port ||
        url_parse_port(a.port, a.port_len, &out->port) != 0 ||
        copy_host(out->host, sizeof out->host, a.host, a.host_len) != 0 ||
        (a.rest[0] && strcmp(a.rest, "/") != 0))
        return err_set(err, ERR_CONFIG,
                       "%s is malformed (expected [http://][user:pass@]host:port)", var);
    if (a.user && decode_userinfo(out->userinfo, sizeof out->userinfo, a.user,
                                  a.user_len) != 0)
        return err_set(err, ERR_CONFIG, "%s has malformed credentials", var);
    out->use = 1;
    return ERR_OK;
}

/* ---- no_proxy ----------------------------------------------------------- */

static int cidr_contains(const ipaddr *net, int bits, const ipaddr *ip)
{
    if (net->family != ip->family)
        return 0;
    int whole = bits / 8, rest = bits % 8;
    if (memcmp(net->bytes, ip->bytes, (size_t)whole) != 0)
        return 0;
    if (rest == 0)
        return 1;
    unsigned mask = (0xffu << (8 - rest)) & 0xffu;
    return (net->bytes[whole] & mask) == (ip->bytes[whole] & mask);
}

static int match_cidr(const char *entry, const ipaddr *ip, int *match)
{
    char addr[64];
    const char *slash = strchr(entry, '/');
    size_t n = (size_t)(slash - entry);
    if (n == 0 || n >= sizeof addr)
        return -1;
    memcpy(addr, entry, n);
    addr[n] = '\0';
    ipaddr net = ip_parse(addr);
    char *end;
    long bits = strtol(slash + 1, &end, 10);
    if (!net.family || slash[1] == '\0' || *end || bits < 0 || bits > ip_len(&net) * 8)
        return -1;
    *match = cidr_contains(&net, (int)bits, ip);
    return 0;
}

/* A name suffix match on label boundaries: "example.com" covers itself and
 * "a.example.com", never "badexample.com". */
static int host_suffix_match(const char *host, const char *domain)
{
    size_t h = strlen(host), d = strlen(domain);
    if (h == d)
        return strcmp(host, domain) == 0;
    return h > d && host[h - d - 1] == '.' && strcmp(host + h - d, domain) == 0;
}

static int match_host_entry(const char *entry, const endpoint *ep, const ipaddr *ip,
                            int *match)
{
    authority a;
    char host[256];
    int port = 0;
    int colons = 0;
    for (const char *p = entry; *p; p++)
        colons += *p == ':';
    if (entry[0] != '[' && colons > 1) {
        /* a bare IPv6 literal: its colons are not a port separator */
        memset(&a, 0, sizeof a);
        a.host = entry;
        a.host_len = strlen(entry);
        a.rest = entry + a.host_len;
    } else if (split_authority(entry, &a) != 0 || a.user) {
        return -1;
    }
    if (a.rest[0] || (a.port && url_parse_port(a.port, a.port_len, &port) != 0))
        return -1;
    const char *name = a.host;
    size_t len = a.host_len;
    if (len > 2 && name[0] == '*' && name[1] == '.') {
        name += 2;
        len -= 2;
    } else if (len > 1 && name[0] == '.') {
        name += 1;
        len -= 1;
    }
    if (copy_host(host, sizeof host, name, len) != 0)
        return -1;
    *match = 0;
    if (port && port != ep->port)
        return 0;
    ipaddr entry_ip = ip_parse(host);
    if (ip->family || entry_ip.family)
        *match = ip->family == entry_ip.family &&
                 memcmp(ip->bytes, entry_ip.bytes, (size_t)ip_len(ip)) == 0;
    else
        *match = host_suffix_match(ep->host, host);
    return 0;
}

static int entry_matches(const char *entry, const endpoint *ep, const ipaddr *ip,
                         int *match)
{
    *match = 0;
    if (strcmp(entry, "*") == 0) {
        *match = 1;
        return 0;
    }
    if (strchr(entry, '/'))
        return match_cidr(entry, ip, match); /* never matches a name host */
    return match_host_entry(entry, ep, ip, match);
}

static err_code no_proxy_exempts(const char *var, const char *list, const endpoint *ep,
                                 int *exempt, char *err)
{
    ipaddr ip = ip_parse(ep->host);
    *exempt = 0;
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        const char *start = p, *end = p + n;
        while (start < end && (*start == ' ' || *start == '\t'))
            start++;
        while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        char entry[300];
        if ((size_t)(end - start) >= sizeof entry)
            return err_set(err, ERR_CONFIG, "%s has a malformed entry", var);
        memcpy(entry, start, (size_t)(end - start));
        entry[end - start] = '\0';
        int match = 0;
        if (entry[0] && entry_matches(entry, ep, &ip, &match) != 0)
            return err_set(err, ERR_CONFIG, "%s has a malformed entry", var);
        *exempt |= match;
        p += n + (p[n] == ',');
    }
    return ERR_OK;
}

/* ---- the decision ------------------------------------------------------- */

err_code netenv_proxy_for_env(const char *url,
                              const char *(*lookup)(const char *name, void *ud),
                              void *ud, netenv_proxy *out, char *err)
{
    if (!url || !lookup || !out)
        return err_set(err, ERR_USAGE, "netenv_proxy_for_env: NULL argument");
    memset(out, 0, sizeof *out);
    endpoint ep;
    err_code rc = parse_endpoint(url, &ep, err);
    if (rc != ERR_OK)
        return rc;
    const char *var = NULL;
    const char *value = first_set(lookup, ud, ep.secure ? SECURE_VARS : PLAIN_VARS, &var);
    netenv_proxy px;
    if (value && (rc = parse_proxy(var, value, &px, err)) != ERR_OK)
        return rc;
    const char *np_var = NULL;
    const char *np = first_set(lookup, ud, NO_PROXY_VARS, &np_var);
    int exempt = 0;
    if (np && (rc = no_proxy_exempts(np_var, np, &ep, &exempt, err)) != ERR_OK)
        return rc;
    if (value && !exempt)
        *out = px;
    return ERR_OK;
}
