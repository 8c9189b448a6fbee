/* netenv: proxy variable precedence, no_proxy forms, malformed values. */
#include "netenv.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

/* A fake environment: NULL-terminated pairs {name, value}. */
typedef struct fake_env {
    const char *pairs[24][2];
} fake_env;

static const char *fake_lookup(const char *name, void *ud)
{
    const fake_env *env = ud;
    for (int i = 0; env->pairs[i][0]; i++)
        if (strcmp(env->pairs[i][0], name) == 0)
            return env->pairs[i][1];
    return NULL;
}

/* The proxy chosen for url under env, as "host:port", "direct" or
 * "error:<code>". The error text lands in err. */
static const char *decide(const fake_env *env, const char *url, netenv_proxy *px, char *err)
{
    static char out[300];
    err[0] = '\0';
    err_code rc = netenv_proxy_for_env(url, fake_lookup, (void *)env, px, err);
    if (rc != ERR_OK)
        snprintf(out, sizeof out, "error:%s", err_str(rc));
    else if (!px->use)
        snprintf(out, sizeof out, "direct");
    else
        snprintf(out, sizeof out, "%s:%d", px->host, px->port);
    return out;
}

#define EXPECT(env, url, want)                                                        \
    do {                                                                              \
        netenv_proxy px_;                                                             \
        char err_[ERR_BUFSZ];                                                         \
        const char *got_ = decide(env, url, &px_, err_);                              \
        UNIT_CHECK(strcmp(got_, want) == 0, "%s: got %s, want %s (%s)", url, got_,    \
                   want, err_);                                                       \
    } while (0)

static void test_secure_precedence(void)
{
    fake_env all = {{{"https_proxy", "http://a:1"}, {"HTTPS_PROXY", "http://b:2"},
                     {"all_proxy", "http://c:3"}, {"ALL_PROXY", "http://d:4"},
                     {"http_proxy", "http://e:5"}, {"HTTP_PROXY", "http://f:6"}}};
    EXPECT(&all, "wss://band.example/socket", "a:1");
    EXPECT(&all, "https://band.example/api", "a:1");
    fake_env upper = {{{"HTTPS_PROXY", "http://b:2"}, {"all_proxy", "http://c:3"},
                       {"http_proxy", "http://e:5"}}};
    EXPECT(&upper, "wss://band.example/", "b:2");
    fake_env allp = {{{"all_proxy", "http://c:3"}, {"ALL_PROXY", "http://d:4"},
                      {"http_proxy", "http://e:5"}}};
    EXPECT(&allp, "wss://band.example/", "c:3");
    fake_env allupper = {{{"ALL_PROXY", "http://d:4"}, {"http_proxy", "http://e:5"}}};
    EXPECT(&allupper, "https://band.example/", "d:4");
    fake_env plain_only = {{{"http_proxy", "http://e:5"}, {"HTTP_PROXY", "http://f:6"}}};
    EXPECT(&plain_only, "wss://band.example/", "direct");
}

static void test_plain_precedence(void)
{
    fake_env all = {{{"https_proxy", "http://a:1"}, {"http_proxy", "http://e:5"},
                     {"HTTP_PROXY", "http://f:6"}, {"all_proxy", "http://c:3"}}};
    EXPECT(&all, "ws://band.example/socket", "e:5");
    EXPECT(&all, "http://band.example/", "e:5");
    fake_env upper = {{{"HTTP_PROXY", "http://f:6"}, {"all_proxy", "http://c:3"}}};
    EXPECT(&upper, "ws://band.example/", "f:6");
    fake_env allp = {{{"all_proxy", "http://c:3"}, {"ALL_PROXY", "http://d:4"}}};
    EXPECT(&allp, "HTTP://band.example/", "c:3");
    fake_env allupper = {{{"ALL_PROXY", "http://d:4"}, {"https_proxy", "http://a:1"}}};
    EXPECT(&allupper, "ws://band.example/", "d:4");
    fake_env none = {{{"https_proxy", "http://a:1"}}};
    EXPECT(&none, "ws://band.example/", "direct");
}

static void test_empty_counts_as_unset(void)
{
    /* ctest's ENVIRONMENT_MODIFICATION unset: leaves "" behind */
    fake_env env = {{{"https_proxy", ""}, {"HTTPS_PROXY", "http://b:2"}, {"no_proxy", ""},
                     {"NO_PROXY", "other.example"}}};
    EXPECT(&env, "wss://band.example/", "b:2");
    EXPECT(&env, "wss://other.example/", "direct");
}

static void test_value_forms(void)
{
    netenv_proxy px;
    char err[ERR_BUFSZ];
    fake_env bare = {{{"https_proxy", "gateway.docker.internal:3128"}}};
    EXPECT(&bare, "wss://x.example/", "gateway.docker.internal:3128");
    fake_env slash = {{{"https_proxy", "HTTP://Proxy.Example:8080/"}}};
    EXPECT(&slash, "wss://x.example/", "proxy.example:8080");
    fake_env v6 = {{{"https_proxy", "http://[::1]:3128"}}};
    EXPECT(&v6, "wss://x.example/", "::1:3128");

    fake_env creds = {{{"https_proxy", "http://us%40er:p%3Ass@proxy:3128"}}};
    UNIT_CHECK(strcmp(decide(&creds, "wss://x.example/", &px, err), "proxy:3128") == 0,
               "credentials split off the host (%s)", err);
    UNIT_CHECK(strcmp(px.userinfo, "us@er:p:ss") == 0, "userinfo decoded: %s", px.userinfo);
    fake_env nocreds = {{{"https_proxy", "http://proxy:3128"}}};
    decide(&nocreds, "wss://x.example/", &px, err);
    UNIT_CHECK(px.userinfo[0] == '\0', "no userinfo when none given");
}

static void test_malformed_values_name_the_variable_only(void)
{
    static const char *const bad[] = {
        "http://s3cr3t:hunter22@proxy",          /* no port */
        "http://s3cr3t:hunter22@proxy:99999",    /* port out of range */
        "http://s3cr3t:hunter22@proxy:31x8",     /* port not a number */
        "socks5://s3cr3t:hunter22@proxy:1080",   /* unsupported scheme */
        "https://s3cr3t:hunter22@proxy:3128",    /* TLS to the proxy: unsupported */
        "http://s3cr3t:hunter22@proxy:3128/path", /* a path */
        "http://s3cr3t:hunter22@:3128",          /* no host */
        "http://s3cr3t:hunter22@[::1:3128",      /* unclosed bracket */
        "http://s3cr3t:hunter22@pro xy:3128",    /* a space */
        "http://s3cr3t:hunter22@a:b:3128",       /* unbracketed colons */
        "http://s3cr3t%zz:hunter22@proxy:3128",  /* bad escape */
        "http://s3cr3t%00:hunter22@proxy:3128",  /* escaped NUL */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fake_env env = {{{"HTTPS_PROXY", bad[i]}}};
        netenv_proxy px;
        char err[ERR_BUFSZ] = "";
        err_code rc = netenv_proxy_for_env("wss://x.example/", fake_lookup, &env, &px, err);
        UNIT_CHECK(rc == ERR_CONFIG, "bad value #%zu: rc=%s", i, err_str(rc));
        UNIT_CHECK(strstr(err, "HTTPS_PROXY") != NULL, "bad value #%zu: message names the "
                   "variable: %s", i, err);
        UNIT_CHECK(!strstr(err, "s3cr3t") && !strstr(err, "hunter22") && !strstr(err, "proxy:"),
                   "bad value #%zu: message leaks the value: %s", i, err);
        UNIT_CHECK(!px.use, "bad value #%zu: no proxy on error", i);
    }
}

static void test_malformed_reported_even_when_exempt(void)
{
    fake_env env = {{{"https_proxy", "http://proxy"}, {"no_proxy", "*"}}};
    EXPECT(&env, "wss://x.example/", "error:configuration error");
}

static void test_no_proxy_names(void)
{
    fake_env env = {{{"http_proxy", "http://p:1"},
                     {"no_proxy", " exact.example , .dot.example,bare.example,*.star.example"}}};
    EXPECT(&env, "ws://exact.example/", "direct");
    EXPECT(&env, "ws://EXACT.example:80/", "direct");
    EXPECT(&env, "ws://sub.exact.example/", "direct");  /* bare names cover subdomains */
    EXPECT(&env, "ws://notexact.example/", "p:1");      /* on label boundaries only */
    EXPECT(&env, "ws://a.dot.example/", "direct");
    EXPECT(&env, "ws://dot.example/", "direct");
    EXPECT(&env, "ws://a.b.bare.example/", "direct");
    EXPECT(&env, "ws://star.example/", "direct");
    EXPECT(&env, "ws://x.star.example/", "direct");
    EXPECT(&env, "ws://example/", "p:1");
    EXPECT(&env, "ws://other.example/", "p:1");
}

static void test_no_proxy_star_and_precedence(void)
{
    fake_env star = {{{"http_proxy", "http://p:1"}, {"NO_PROXY", "*"}}};
    EXPECT(&star, "ws://anything.example/", "direct");
    fake_env lower_first = {{{"http_proxy", "http://p:1"}, {"no_proxy", "a.example"},
                             {"NO_PROXY", "b.example"}}};
    EXPECT(&lower_first, "ws://a.example/", "direct");
    EXPECT(&lower_first, "ws://b.example/", "p:1");
    fake_env star_in_list = {{{"http_proxy", "http://p:1"}, {"no_proxy", "x.example,*"}}};
    EXPECT(&star_in_list, "ws://y.example/", "direct");
}

static void test_no_proxy_ports(void)
{
    fake_env env = {{{"https_proxy", "http://p:1"}, {"http_proxy", "http://p:2"},
                     {"no_proxy", "api.example:8443,plain.example:80,[::1]:9000"}}};
    EXPECT(&env, "wss://api.example:8443/", "direct");
    EXPECT(&env, "wss://api.example/", "p:1");          /* 443 != 8443 */
    EXPECT(&env, "ws://plain.example/", "direct");      /* default port 80 */
    EXPECT(&env, "ws://plain.example:8080/", "p:2");
    EXPECT(&env, "ws://[::1]:9000/", "direct");
    EXPECT(&env, "ws://[::1]:9001/", "p:2");
}

static void test_no_proxy_ip_literals(void)
{
    /* what sbx puts in a sandbox */
    fake_env sbx = {{{"HTTPS_PROXY", "http://gateway.docker.internal:3128"},
                     {"NO_PROXY", "localhost,127.0.0.1,::1,gateway.docker.internal"}}};
    EXPECT(&sbx, "wss://[::1]:4000/socket", "direct");
    EXPECT(&sbx, "wss://[0:0:0:0:0:0:0:1]/", "direct"); /* same address, other spelling */
    EXPECT(&sbx, "wss://127.0.0.1:4000/", "direct");
    EXPECT(&sbx, "wss://localhost/", "direct");
    EXPECT(&sbx, "wss://band.example/", "gateway.docker.internal:3128");
    EXPECT(&sbx, "wss://[::2]/", "gateway.docker.internal:3128");
    fake_env bracketed = {{{"https_proxy", "http://p:1"}, {"no_proxy", "[::1]"}}};
    EXPECT(&bracketed, "wss://[::1]/", "direct");
    fake_env ip_suffix = {{{"https_proxy", "http://p:1"}, {"no_proxy", "0.0.1,2.3.4"}}};
    EXPECT(&ip_suffix, "wss://1.2.3.4/", "p:1"); /* IPs never match by suffix */
}

static void test_no_proxy_cidr(void)
{
    fake_env env = {{{"https_proxy", "http://p:1"}, {"no_proxy", "10.0.0.0/8,fd00::/8,192.168.1.128/25"}}};
    EXPECT(&env, "wss://10.20.30.40/", "direct");
    EXPECT(&env, "wss://11.0.0.1/", "p:1");
    EXPECT(&env, "wss://[fd12::1]/", "direct");
    EXPECT(&env, "wss://[fe80::1]/", "p:1");
    EXPECT(&env, "wss://192.168.1.200/", "direct");
    EXPECT(&env, "wss://192.168.1.100/", "p:1");
    EXPECT(&env, "wss://ten.example/", "p:1"); /* a range never covers a name */
}

static void test_no_proxy_malformed(void)
{
    static const char *const bad[] = {"ok.example,host:notaport", "10.0.0.0/33",
                                      "banana/8", "h:0", "user@host", "[::1", "a/b/c",
                                      "host:65536"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fake_env env = {{{"https_proxy", "http://p:1"}, {"NO_PROXY", bad[i]}}};
        netenv_proxy px;
        char err[ERR_BUFSZ] = "";
        err_code rc = netenv_proxy_for_env("wss://x.example/", fake_lookup, &env, &px, err);
        UNIT_CHECK(rc == ERR_CONFIG, "no_proxy entry #%zu: rc=%s", i, err_str(rc));
        UNIT_CHECK(strstr(err, "NO_PROXY") != NULL, "entry #%zu names the variable: %s", i, err);
        UNIT_CHECK(strstr(err, bad[i]) == NULL, "entry #%zu message echoes the value", i);
    }
    fake_env empties = {{{"https_proxy", "http://p:1"}, {"no_proxy", ",, ,x.example,"}}};
    EXPECT(&empties, "wss://x.example/", "direct");
}

static void test_bad_urls(void)
{
    fake_env env = {{{"https_proxy", "http://p:1"}}};
    EXPECT(&env, "ftp://x.example/", "error:invalid usage");
    EXPECT(&env, "x.example", "error:invalid usage");
    EXPECT(&env, "wss:///path", "error:invalid usage");
    EXPECT(&env, "wss://x.example:0/", "error:invalid usage");
    EXPECT(&env, "wss://user:pw@x.example/", "p:1"); /* userinfo in the target is ignored */
    netenv_proxy px;
    char err[ERR_BUFSZ];
    UNIT_CHECK(netenv_proxy_for_env(NULL, fake_lookup, &env, &px, err) == ERR_USAGE,
               "NULL url");
}

static void test_process_environment(void)
{
    setenv("HTTPS_PROXY", "http://envproxy:3128", 1);
    setenv("NO_PROXY", "skip.example", 1);
    netenv_proxy px;
    char err[ERR_BUFSZ];
    err_code rc = netenv_proxy_for("wss://band.example/", &px, err);
    UNIT_CHECK(rc == ERR_OK && px.use && strcmp(px.host, "envproxy") == 0 && px.port == 3128,
               "getenv-backed decision: rc=%d use=%d host=%s", rc, px.use, px.host);
    rc = netenv_proxy_for("wss://skip.example/", &px, err);
    UNIT_CHECK(rc == ERR_OK && !px.use, "getenv-backed no_proxy");
    unsetenv("HTTPS_PROXY");
    unsetenv("NO_PROXY");
}

const unit_case unit_cases[] = {
    {"secure_precedence", test_secure_precedence},
    {"plain_precedence", test_plain_precedence},
    {"empty_counts_as_unset", test_empty_counts_as_unset},
    {"value_forms", test_value_forms},
    {"malformed_values_name_the_variable_only", test_malformed_values_name_the_variable_only},
    {"malformed_reported_even_when_exempt", test_malformed_reported_even_when_exempt},
    {"no_proxy_names", test_no_proxy_names},
    {"no_proxy_star_and_precedence", test_no_proxy_star_and_precedence},
    {"no_proxy_ports", test_no_proxy_ports},
    {"no_proxy_ip_literals", test_no_proxy_ip_literals},
    {"no_proxy_cidr", test_no_proxy_cidr},
    {"no_proxy_malformed", test_no_proxy_malformed},
    {"bad_urls", test_bad_urls},
    {"process_environment", test_process_environment},
    {NULL, NULL},
};
