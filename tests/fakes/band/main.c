/* fake-band: a fake Band platform on loopback, for the offline tests.
 *
 *   fake-band --user-key-file PATH [--user-key-file PATH ...] [--port N] [--log FILE]
 *             [--keys-out FILE] [--tls-cert PEM --tls-key PEM]
 *             [--heartbeat-timeout-ms N]
 *
 * Each key file holds one user API key on its first line (keys never go
 * in argv). --keys-out appends every agent key the fake mints to FILE
 * (0600), so the rehearsal's canary scan can look for them everywhere.
 * --tls-cert and --tls-key (both or neither) make the api port https and
 * wss (the TLS world); the control port stays plain http.
 * --heartbeat-timeout-ms closes a Phoenix socket that sent no frame for
 * that long (the platform's ~45 s; 0 = never, the default; see ws.h).
 * Once listening, the only line on stdout is
 *   fake-band listening 127.0.0.1:<port> control 127.0.0.1:<control port>
 * SIGTERM, SIGINT or POST /_fake/shutdown stop it; the exit status is 0
 * after a clean stop, 1 when it cannot start, 2 for bad usage. What it
 * serves is told in rest.h, ws.h and control.h.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "err.h"
#include "redact.h"
#include "server.h"
#include "store.h"

#define MAX_USERS 8

typedef struct options {
    const char *key_files[MAX_USERS];
    int nkeys;
    int port;
    const char *log_path;
    const char *keys_out;
    const char *tls_cert, *tls_key;
    long heartbeat_timeout_ms;
} options;

/* The signal handler's only way to the loop; lws_cancel_service is the
 * call lws allows from outside its thread. */
static volatile sig_atomic_t interrupted;
static struct lws_context *running_ctx;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
    if (running_ctx)
        lws_cancel_service(running_ctx);
}

static int usage(const char *why)
{
    fprintf(stderr,
            "fake-band: %s\nusage: fake-band --user-key-file PATH [--user-key-file PATH ...]"
            " [--port N] [--log FILE] [--keys-out FILE] [--tls-cert PEM --tls-key PEM]"
            " [--heartbeat-timeout-ms N]\n",
            why);
    return 2;
}

static int parse_port(const char *text, int *port)
{
    char *end;
    long n = strtol(text, &end, 10);
    if (!*text || *end || n < 0 || n > 65535)
        return -1;
    *port = (int)n;
    return 0;
}

static int parse_options(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!value)
            return usage("every option takes a value");
        if (strcmp(arg, "--user-key-file") == 0) {
            if (o->nkeys == MAX_USERS)
                return usage("too many --user-key-file options");
            o->key_files[o->nkeys++] = value;
        } else if (strcmp(arg, "--port") == 0) {
            if (parse_port(value, &o->port) != 0)
                return usage("--port must be 0..65535");
        } else if (strcmp(arg, "--log") == 0) {
            o->log_path = value;
        } else if (strcmp(arg, "--keys-out") == 0) {
            o->keys_out = value;
        } else if (strcmp(arg, "--tls-cert") == 0) {
            o->tls_cert = value;
        } else if (strcmp(arg, "--tls-key") == 0) {
            o->tls_key = value;
        } else if (strcmp(arg, "--heartbeat-timeout-ms") == 0) {
            char *end;
            o->heartbeat_timeout_ms = strtol(value, &end, 10);
            if (!*value || *end || o->heartbeat_timeout_ms < 0)
                return usage("--heartbeat-timeout-ms must be a whole number of ms >= 0");
        } else {
            return usage("unknown option");
        }
        i++;
    }
    if (!o->tls_cert != !o->tls_key)
        return usage("--tls-cert and --tls-key go together");
    return o->nkeys ? 0 : usage("at least one --user-key-file is required");
}

/* The first line of the file, without its line ending or surrounding blanks. */
static err_code read_key(const char *path, char *key, size_t cap, char *err)
{
    FILE *fp = fopen(path, "r");
    if (!fp)
        return err_set(err, ERR_IO, "cannot read key file %s: %s", path, strerror(errno));
    char line[IDENT_KEY_SZ + 2] = "";
    int got = fgets(line, sizeof line, fp) != NULL;
    fclose(fp);
    char *start = line;
    while (*start == ' ' || *start == '\t')
        start++;
    size_t n = strcspn(start, "\r\n");
    while (n > 0 && (start[n - 1] == ' ' || start[n - 1] == '\t'))
        n--;
    start[n] = '\0';
    if (!got || n == 0 || n >= cap)
        return err_set(err, ERR_CONFIG, "key file %s has no usable key on its first line", path);
    memcpy(key, start, n + 1);
    return ERR_OK;
}

static err_code load_users(store *st, const options *o, char *err)
{
    for (int i = 0; i < o->nkeys; i++) {
        char key[IDENT_KEY_SZ];
        err_code rc = read_key(o->key_files[i], key, sizeof key, err);
        if (rc != ERR_OK)
            return rc;
        redact_add_secret(key); /* best effort: a short test key is still served */
        if (!store_add_user(st, key))
            return err_set(err, ERR_CONFIG, "key file %s repeats another user's key",
                           o->key_files[i]);
    }
    return ERR_OK;
}

static FILE *open_log(const char *path, char *err)
{
    mode_t old = umask(077);
    FILE *fp = fopen(path, "a");
    umask(old);
    if (!fp)
        err_set(err, ERR_IO, "cannot open log %s: %s", path, strerror(errno));
    return fp;
}

static void catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = SIG_IGN; /* a peer that vanished mid-write is not our death */
    sigaction(SIGPIPE, &sa, NULL);
}

static int serve(const options *o, store *st, FILE *log)
{
    char err[ERR_BUFSZ];
    server srv;
    server_tls tls = {o->tls_cert, o->tls_key};
    if (server_start(&srv, st, o->port, o->tls_cert ? &tls : NULL, log, err) != ERR_OK) {
        fprintf(stderr, "fake-band: %s\n", err);
        server_close(&srv);
        return 1;
    }
    srv.heartbeat_timeout_ms = o->heartbeat_timeout_ms;
    running_ctx = srv.ctx;
    printf("fake-band listening 127.0.0.1:%d control 127.0.0.1:%d\n", srv.api_port,
           srv.control_port);
    fflush(stdout);
    server_run(&srv, &interrupted);
    running_ctx = NULL;
    server_close(&srv);
    return 0;
}

int main(int argc, char **argv)
{
    options o;
    if (parse_options(argc, argv, &o) != 0)
        return 2;
    catch_signals();
    char err[ERR_BUFSZ];
    store *st = store_new();
    FILE *log = NULL;
    int rc = 1;
    if (load_users(st, &o, err) != ERR_OK || (o.log_path && !(log = open_log(o.log_path, err))) ||
        (o.keys_out && !(st->keys_out = open_log(o.keys_out, err))))
        fprintf(stderr, "fake-band: %s\n", err);
    else
        rc = serve(&o, st, log);
    if (log)
        fclose(log);
    if (st->keys_out)
        fclose(st->keys_out);
    store_free(st);
    return rc;
}
