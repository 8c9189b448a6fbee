#include "tk_band.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <openssl/rand.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tk.h"
#include "tk_wait.h"

#ifdef __linux__
#include <sys/prctl.h>
#endif

#define START_TIMEOUT_MS 10000
#define STOP_TIMEOUT_MS 5000
#define HTTP_TIMEOUT_MS 10000L

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void random_key(char out[TK_BAND_KEY_SZ])
{
    unsigned char b[16];
    if (RAND_bytes(b, sizeof b) != 1)
        abort();
    int n = snprintf(out, TK_BAND_KEY_SZ, "tk-user-");
    for (size_t i = 0; i < sizeof b; i++)
        n += snprintf(out + n, (size_t)(TK_BAND_KEY_SZ - n), "%02x", b[i]);
}

static void write_key_file(const char *dir, const char *name, const char *key, char *path_out,
                           size_t cap)
{
    char *path = tk_path(dir, name);
    char line[TK_BAND_KEY_SZ + 2];
    snprintf(line, sizeof line, "%s\n", key);
    tk_write(path, line);
    snprintf(path_out, cap, "%s", path);
    free(path);
}

/* The child: stdout to the pipe, die with the parent, become fake-band. */
static void exec_fake(int out_fd, char *const argv[])
{
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGTERM); /* a crashed test leaves no fake behind */
#endif
    dup2(out_fd, STDOUT_FILENO);
    close(out_fd);
    execv(argv[0], argv);
    fprintf(stderr, "tk_band: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* Reads the listening line within the start deadline. */
static int read_listening_line(int fd, char *line, size_t cap)
{
    size_t n = 0;
    long deadline = now_ms() + START_TIMEOUT_MS;
    while (n + 1 < cap) {
        long left = deadline - now_ms();
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            return -1;
        ssize_t got = read(fd, line + n, 1);
        if (got <= 0)
            return -1;
        if (line[n] == '\n') {
            line[n] = '\0';
            return 0;
        }
        n++;
    }
    return -1;
}

static int parse_listening_line(tk_band *b, const char *line)
{
    if (sscanf(line, "fake-band listening 127.0.0.1:%d control 127.0.0.1:%d", &b->port,
               &b->control_port) != 2)
        return -1;
    const char *s = b->ca_file[0] ? "s" : "";
    snprintf(b->rest_url, sizeof b->rest_url, "http%s://127.0.0.1:%d", s, b->port);
    snprintf(b->ws_url, sizeof b->ws_url, "ws%s://127.0.0.1:%d/api/v1/socket/websocket", s,
             b->port);
    snprintf(b->control_url, sizeof b->control_url, "http://127.0.0.1:%d", b->control_port);
    return 0;
}

static int spawn(tk_band *b, char *const argv[])
{
    int fds[2];
    if (pipe(fds) != 0)
        abort();
    fflush(NULL);
    b->pid = fork();
    if (b->pid < 0)
        abort();
    if (b->pid == 0) {
        close(fds[0]);
        exec_fake(fds[1], argv);
    }
    close(fds[1]);
    char line[256];
    int rc = read_listening_line(fds[0], line, sizeof line);
    close(fds[0]);
    if (rc == 0)
        rc = parse_listening_line(b, line);
    return rc;
}

static void pick_key(char out[TK_BAND_KEY_SZ], const char *given)
{
    if (given)
        snprintf(out, TK_BAND_KEY_SZ, "%s", given);
    else
        random_key(out);
}

static int start(tk_band *b, const tk_band_opts *o, int second_user, const char *user_key2)
{
    const char *user_key = o->user_key;
    memset(b, 0, sizeof *b);
    if (o->tls)
        snprintf(b->ca_file, sizeof b->ca_file, "%s", o->tls->ca);
    char *dir = tk_tmpdir("band");
    snprintf(b->dir, sizeof b->dir, "%s", dir);
    free(dir);
    snprintf(b->log_path, sizeof b->log_path, "%s/fake-band.log", b->dir);
    pick_key(b->user_key, user_key);
    if (second_user)
        pick_key(b->user_key2, user_key2);

    char file1[1100], file2[1100], keys[1100];
    write_key_file(b->dir, "user.key", b->user_key, file1, sizeof file1);
    snprintf(keys, sizeof keys, "%s/minted.keys", b->dir);
    char *bin = tk_bin("fake-band");
    char hb[24];
    snprintf(hb, sizeof hb, "%ld", o->heartbeat_timeout_ms);
    char *argv[16] = {bin, "--log", b->log_path, "--keys-out", keys, "--user-key-file", file1,
                      "--heartbeat-timeout-ms", hb};
    int n = 9;
    if (second_user) {
        write_key_file(b->dir, "user2.key", b->user_key2, file2, sizeof file2);
        argv[n++] = "--user-key-file";
        argv[n++] = file2;
    }
    if (o->tls) {
        argv[n++] = "--tls-cert";
        argv[n++] = (char *)o->tls->cert;
        argv[n++] = "--tls-key";
        argv[n++] = (char *)o->tls->key;
    }
    int rc = spawn(b, argv);
    free(bin);
    if (rc != 0) {
        fprintf(stderr, "tk_band: fake-band did not report listening within %d ms\n",
                START_TIMEOUT_MS);
        tk_band_stop(b);
    }
    return rc;
}

int tk_band_start(tk_band *b, const char *user_key)
{
    tk_band_opts o = {.user_key = user_key};
    return start(b, &o, 0, NULL);
}

int tk_band_start_opts(tk_band *b, const tk_band_opts *o)
{
    return start(b, o, 0, NULL);
}

int tk_band_start2(tk_band *b, const char *user_key, const char *user_key2)
{
    tk_band_opts o = {.user_key = user_key};
    return start(b, &o, 1, user_key2);
}

/* waitpid with a deadline; the exit status, or -1 when it is still running. */
static int wait_exit(pid_t pid, long timeout_ms)
{
    int status = tk_wait_child(pid, (int)timeout_ms);
    return status == -2 ? 0 : status; /* already reaped: gone */
}

int tk_band_stop(tk_band *b)
{
    int status = 0;
    if (b->pid > 0) {
        kill(b->pid, SIGTERM);
        status = wait_exit(b->pid, STOP_TIMEOUT_MS);
        if (status < 0) {
            kill(b->pid, SIGKILL);
            wait_exit(b->pid, STOP_TIMEOUT_MS);
        }
        b->pid = 0;
    }
    if (b->dir[0]) {
        tk_rmtree(b->dir);
        b->dir[0] = '\0';
    }
    return status;
}

/* ---- HTTP ---------------------------------------------------------------- */

typedef struct grow {
    char *buf;
    size_t len;
} grow;

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
    grow *g = ud;
    size_t add = size * n;
    char *buf = realloc(g->buf, g->len + add + 1);
    if (!buf)
        abort();
    memcpy(buf + g->len, data, add);
    g->len += add;
    buf[g->len] = '\0';
    g->buf = buf;
    return add;
}

static size_t on_header(char *data, size_t size, size_t n, void *ud)
{
    long *retry_after = ud;
    size_t len = size * n;
    static const char name[] = "retry-after:";
    if (len > sizeof name && strncasecmp(data, name, sizeof name - 1) == 0)
        *retry_after = strtol(data + sizeof name - 1, NULL, 10);
    return len;
}

static char *http_call(const char *base_url, const char *ca_file, const char *method,
                       const char *path_with_query, const char *key, const char *json,
                       long *status, long *retry_after)
{
    char url[2048], auth[TK_BAND_KEY_SZ + 16];
    long retry = -1;
    grow body = {0};
    snprintf(url, sizeof url, "%s%s", base_url, path_with_query);
    CURL *h = curl_easy_init();
    if (!h)
        abort();
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
    if (key) {
        snprintf(auth, sizeof auth, "X-API-Key: %s", key);
        headers = curl_slist_append(headers, auth);
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_PROXY, "");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, HTTP_TIMEOUT_MS);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &retry);
    if (json)
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, json);
    if (ca_file && *ca_file) /* only our fake is asked: its CA alone will do */
        curl_easy_setopt(h, CURLOPT_CAINFO, ca_file);
    CURLcode rc = curl_easy_perform(h);
    *status = 0;
    if (rc == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(h);
    if (retry_after)
        *retry_after = retry;
    if (rc != CURLE_OK) {
        free(body.buf);
        return NULL;
    }
    return body.buf ? body.buf : calloc(1, 1);
}

char *tk_band_http(const char *base_url, const char *method, const char *path_with_query,
                   const char *key, const char *json, long *status, long *retry_after)
{
    return http_call(base_url, NULL, method, path_with_query, key, json, status, retry_after);
}

char *tk_band_request(tk_band *b, const char *method, const char *path_with_query, const char *key,
                      const char *json, long *status)
{
    return http_call(b->rest_url, b->ca_file, method, path_with_query, key, json, status, NULL);
}

char *tk_band_get(tk_band *b, const char *path_with_query, const char *key, long *status)
{
    return tk_band_request(b, "GET", path_with_query, key, NULL, status);
}

int tk_band_control(tk_band *b, const char *json)
{
    long status;
    free(tk_band_http(b->control_url, "POST", "/_fake/control", NULL, json, &status, NULL));
    return status ? (int)status : -1;
}

long tk_band_stat(tk_band *b, const char *name)
{
    long status;
    char *text = tk_band_http(b->control_url, "GET", "/_fake/stats", NULL, NULL, &status, NULL);
    cJSON *doc = text && status == 200 ? cJSON_Parse(text) : NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, name);
    long value = cJSON_IsNumber(v) ? (long)v->valuedouble : -1;
    cJSON_Delete(doc);
    free(text);
    return value;
}

int tk_band_stats(tk_band *b, int *agents, int *rooms)
{
    long a = tk_band_stat(b, "live_agents"), r = tk_band_stat(b, "live_rooms");
    if (a < 0 || r < 0)
        return -1;
    if (agents)
        *agents = (int)a;
    if (rooms)
        *rooms = (int)r;
    return 0;
}

void tk_band_config(const tk_band *b, int e2e_timeout_s, config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->rest_url, sizeof cfg->rest_url, "%s", b->rest_url);
    snprintf(cfg->rest_url_var, sizeof cfg->rest_url_var, "BAND_REST_URL");
    snprintf(cfg->ws_url, sizeof cfg->ws_url, "%s", b->ws_url);
    snprintf(cfg->api_key_user, sizeof cfg->api_key_user, "%s", b->user_key);
    snprintf(cfg->ca_file, sizeof cfg->ca_file, "%s", b->ca_file);
    cfg->e2e_timeout_s = e2e_timeout_s;
}
