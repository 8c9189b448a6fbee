/* fake sbx: every command's output and exit code against
 * reference/sbx-cli.md, the sandbox environment of exec, the daemon's
 * proxy (allowed and denied CONNECT, plain HTTP, policy log), the faults
 * (net-cut, freeze, hang, vanish), `daemon stop` ending sessions, and the
 * fake uv. Uses Linux /proc to see a frozen process (tests only). */
#include "unit.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "platform.h"
#include "proc.h"
#include "tk.h"
#include "tk_net.h"
#include "tk_run.h"
#include "tk_sbx.h"

#define CHECK_ERR 1 /* fake sbx's own failure status */
#define CONNECT_OK "HTTP/1.0 200 OK\r\n\r\n"
#define NO_SANDBOX_BLOCK "ERROR: no sandbox named 'nobox'\n\nTo create one:\n  sbx create AGENT WORKSPACE\n"

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Runs the fake and keeps only its exit status. */
static int run_status(tk_sbx *w, const char *const *args)
{
    proc_result r;
    int status = tk_sbx_runv(w, NULL, args, 0, &r);
    proc_result_free(&r);
    return status;
}

static void world_with_box(tk_sbx *w, const char *policy)
{
    tk_sbx_setup(w, policy);
    proc_result r;
    int status = tk_sbx_run(w, &r, "create", "--name", "box", "shell", w->workspace, NULL);
    UNIT_CHECK(status == 0, "create box: %d %s", status, r.err.data);
    proc_result_free(&r);
}

/* ---- sockets ---- */

static int tcp_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
        abort();
    return fd;
}

static void send_text(int fd, const char *text)
{
    size_t n = strlen(text);
    if (write(fd, text, n) != (ssize_t)n)
        abort();
}

/* Reads what arrives within wait_ms, stopping at EOF or when `want` bytes
 * are in. Returns the byte count; *eof tells whether the peer closed. */
static size_t recv_some(int fd, char *buf, size_t cap, size_t want, int wait_ms, int *eof)
{
    size_t len = 0;
    int64_t deadline = clock_mono_ms() + wait_ms;
    *eof = 0;
    while (len < want && len + 1 < cap) {
        int64_t left = deadline - clock_mono_ms();
        struct pollfd p = {fd, POLLIN, 0};
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            break;
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n <= 0) {
            *eof = 1;
            break;
        }
        len += (size_t)n;
    }
    buf[len] = '\0';
    return len;
}

/* A loopback echo server in a child process: every client gets its bytes back. */
typedef struct echo {
    pid_t pid;
    int port;
} echo;

/* Longest an echo server may live: ctest's timeout for a unit test. */
#define ECHO_LIFETIME_MS 300000

static void echo_serve(int lfd)
{
    struct pollfd fds[32];
    nfds_t n = 1;
    fds[0] = (struct pollfd){lfd, POLLIN, 0};
    int64_t until = clock_mono_ms() + ECHO_LIFETIME_MS;
    while (clock_mono_ms() < until) {
        if (poll(fds, n, 1000) < 0)
            _exit(1);
        if (fds[0].revents && n < 32) {
            int c = accept(lfd, NULL, NULL);
            if (c >= 0)
                fds[n++] = (struct pollfd){c, POLLIN, 0};
        }
        for (nfds_t i = 1; i < n; i++) {
            if (!fds[i].revents)
                continue;
            char buf[4096];
            ssize_t got = read(fds[i].fd, buf, sizeof buf);
            if (got <= 0 || send(fds[i].fd, buf, (size_t)got, MSG_NOSIGNAL) != got) {
                close(fds[i].fd);
                fds[i--] = fds[--n];
            }
        }
    }
    _exit(0);
}

/* A server child that dies with the test, even one killed by ctest's
 * timeout (Linux; tests only). The check after it closes the race with a
 * test that died before the request was made. */
static pid_t fork_server(void)
{
    pid_t test = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != test)
            _exit(0);
    }
    return pid;
}

static void echo_start(echo *e)
{
    int lfd = tk_listen_loopback(&e->port);
    e->pid = fork_server();
    if (e->pid == 0)
        echo_serve(lfd);
    close(lfd);
}

static void echo_stop(echo *e)
{
    kill(e->pid, SIGKILL);
    waitpid(e->pid, NULL, 0);
}

/* The proxy port the fake gives box's commands (from its HTTPS_PROXY). */
static int proxy_port(tk_sbx *w)
{
    proc_result r;
    int status = tk_sbx_run(w, &r, "exec", "box", "sh", "-c", "echo $HTTPS_PROXY", NULL);
    const char *colon = strrchr(r.out.data, ':');
    int port = status == 0 && colon ? atoi(colon + 1) : 0;
    UNIT_CHECK(port > 0, "no proxy in the sandbox: %s", r.out.data);
    proc_result_free(&r);
    return port;
}

/* CONNECT target through the proxy; the reply must be exactly goproxy's. */
static int open_tunnel(int proxy, const char *target)
{
    int fd = tcp_connect(proxy);
    char req[256], buf[256];
    snprintf(req, sizeof req, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target);
    send_text(fd, req);
    int eof;
    recv_some(fd, buf, sizeof buf, strlen(CONNECT_OK), 3000, &eof);
    UNIT_CHECK(!strcmp(buf, CONNECT_OK), "CONNECT %s answered '%s'", target, buf);
    /* Nothing more than those 19 bytes: no headers, no body. */
    size_t extra = recv_some(fd, buf, sizeof buf, 1, 100, &eof);
    UNIT_CHECK(extra == 0 && !eof, "unexpected bytes after the CONNECT reply: '%s'", buf);
    return fd;
}

static int echoes(int fd, const char *text, int wait_ms)
{
    char buf[256];
    int eof;
    send_text(fd, text);
    recv_some(fd, buf, sizeof buf, strlen(text), wait_ms, &eof);
    return strcmp(buf, text) == 0;
}

static void allow(tk_sbx *w, int port)
{
    char res[64];
    snprintf(res, sizeof res, "127.0.0.1:%d", port);
    proc_result r;
    int status = tk_sbx_run(w, &r, "policy", "allow", "network", "--sandbox", "box", res, NULL);
    UNIT_CHECK(status == 0, "allow %s: %s", res, r.err.data);
    proc_result_free(&r);
}

/* ---- plain commands ---- */

static void test_version_outputs(void)
{
    tk_sbx w;
    tk_sbx_setup(&w, NULL);
    proc_result r;
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "version", NULL), 0);
    UNIT_CHECK(!strncmp(r.out.data, "sbx version: v0.45.1 ", 21) && strlen(r.out.data) == 21 + 41 &&
                   strspn(r.out.data + 21, "0123456789abcdef") == 40,
               "version: '%s'", r.out.data);
    CU_ASSERT_STRING_EQUAL(r.err.data, ""); /* version never starts the daemon */
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "--version", NULL), CHECK_ERR);
    CU_ASSERT_STRING_EQUAL(r.err.data, "ERROR: unknown flag: --version\n");
    CU_ASSERT_STRING_EQUAL(r.out.data, "");
    proc_result_free(&r);
    const char *const legacy[] = {"FAKE_SBX_LEGACY_VERSION=1", NULL};
    const char *const args[] = {"version", NULL};
    CU_ASSERT_EQUAL(tk_sbx_runv(&w, legacy, args, 0, &r), 0);
    UNIT_CHECK(!strncmp(r.out.data, "Client Version:  v0.45.1 ", 25) &&
                   strstr(r.out.data, "\nServer Version:  Unavailable (daemon not running"),
               "legacy: '%s'", r.out.data);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "daemon", "status", NULL), 0);
    UNIT_CHECK(!strncmp(r.out.data, "Status: stopped\nSocket: ", 24) &&
                   strstr(r.out.data, "/sandboxd.sock (not connected)\n"),
               "status: %s", r.out.data);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "frobnicate", NULL), CHECK_ERR);
    CU_ASSERT_TRUE(!strncmp(r.err.data, "ERROR: unknown command \"frobnicate\"", 35));
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
}

static void test_refuses_without_state(void)
{
    char *sbx = tk_path(getenv("SMOKE_FAKE_SBX_BIN") ? getenv("SMOKE_FAKE_SBX_BIN")
                                                     : SMOKE_BINARY_DIR "/tests/fake-sbx-bin",
                        "sbx");
    const char *const argv[] = {sbx, "ls", NULL};
    const char *const scrub[] = {"FAKE_SBX_STATE", NULL};
    proc_opts o = {.timeout_ms = 10000, .env = {scrub, NULL}};
    proc_result r;
    char err[ERR_BUFSZ];
    CU_ASSERT_EQUAL(proc_run(argv, &o, &r, err), ERR_OK);
    CU_ASSERT_TRUE(r.exited && r.status == CHECK_ERR);
    UNIT_CHECK(strstr(r.err.data, "ERROR: FAKE_SBX_STATE") != NULL, "stderr: %s", r.err.data);
    proc_result_free(&r);
    const char *const missing[] = {"FAKE_SBX_STATE=/nonexistent/state", NULL};
    o.env = (proc_env){NULL, missing};
    CU_ASSERT_EQUAL(proc_run(argv, &o, &r, err), ERR_OK);
    CU_ASSERT_TRUE(r.exited && r.status == CHECK_ERR);
    proc_result_free(&r);
    free(sbx);
}

static void test_banner_and_autostart(void)
{
    tk_sbx w;
    tk_sbx_setup(&w, NULL);
    proc_result r;
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "ls", NULL), 0);
    CU_ASSERT_STRING_EQUAL(r.out.data, "No sandboxes found.\nLaunch one: sbx run claude\n");
    char want[2048];
    long pid = 0;
    sscanf(strstr(r.err.data, "PID: ") ? strstr(r.err.data, "PID: ") + 5 : "0", "%ld", &pid);
    snprintf(want, sizeof want,
             "Starting sandboxd daemon...\nDaemon started (PID: %ld, socket: %s/sandboxd.sock)\n"
             "Logs: %s/daemon.log\n",
             pid, w.state, w.state);
    UNIT_CHECK(pid > 1 && !strcmp(r.err.data, want), "banner:\n%s", r.err.data);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "ls", NULL), 0);
    CU_ASSERT_STRING_EQUAL(r.err.data, ""); /* already running: no banner */
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "daemon", "status", "--json", NULL), 0);
    UNIT_CHECK(strstr(r.out.data, "\"status\": \"running\"") != NULL, "%s", r.out.data);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "daemon", "stop", NULL), 0);
    proc_result_free(&r);
    const char *const on_stdout[] = {"FAKE_SBX_BANNER_STDOUT=1", NULL};
    const char *const args[] = {"ls", "--json", NULL};
    CU_ASSERT_EQUAL(tk_sbx_runv(&w, on_stdout, args, 0, &r), 0);
    const char *json = strstr(r.out.data, "\n{");
    UNIT_CHECK(!strncmp(r.out.data, "Starting sandboxd daemon...\nDaemon started (PID: ", 48) &&
                   json && strstr(r.out.data, "\nLogs: ") < json,
               "stdout:\n%s", r.out.data);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
}

static void test_ls_outputs(void)
{
    tk_sbx w;
    world_with_box(&w, "balanced");
    proc_result r;
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "ls", NULL), 0);
    UNIT_CHECK(!strncmp(r.out.data, "SANDBOX", 7) && strstr(r.out.data, "AGENT") &&
                   strstr(r.out.data, "STATUS") && strstr(r.out.data, "PORTS") &&
                   strstr(r.out.data, "WORKSPACE\n"),
               "table:\n%s", r.out.data);
    const char *row = strchr(r.out.data, '\n');
    UNIT_CHECK(row && !strncmp(row + 1, "box ", 4) && strstr(row, " shell ") &&
                   strstr(row, " running ") && strstr(row, w.workspace),
               "row: %s", row ? row : "(none)");
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "ls", "-q", NULL), 0);
    CU_ASSERT_STRING_EQUAL(r.out.data, "box\n");
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "list", "--json", NULL), 0);
    static const char head[] = "{\n  \"sandboxes\": [\n    {\n      \"name\": \"box\",\n";
    UNIT_CHECK(!strncmp(r.out.data, head, sizeof head - 1), "ls --json:\n%s", r.out.data);
    cJSON *root = cJSON_Parse(r.out.data);
    cJSON *sb = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "sandboxes"), 0);
    static const char *const keys[] = {"name", "id", "agent", "status", "workspaces",
                                       "created_at", "last_used_at"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        UNIT_CHECK(cJSON_GetObjectItem(sb, keys[i]) != NULL, "ls --json lacks %s", keys[i]);
    CU_ASSERT_EQUAL(strlen(cJSON_GetStringValue(cJSON_GetObjectItem(sb, "id"))), 36);
    cJSON_Delete(root);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "ls", "box", NULL), CHECK_ERR);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
}

static void test_create_rules(void)
{
    tk_sbx w;
    tk_sbx_setup(&w, NULL);
    proc_result r;
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "create", "--name", "box", "shell", w.workspace, NULL),
                    CHECK_ERR);
    /* After the daemon's auto-start banner, sbx's error block. */
    static const char block[] =
        "Logs: %s/daemon.log\nERROR: global network policy has not been initialized\n\n"
        "Initialize it with:\n  sbx policy init <allow-all|balanced|deny-all>\n";
    char want[4400];
    snprintf(want, sizeof want, block, w.state);
    size_t got = strlen(r.err.data), n = strlen(want);
    UNIT_CHECK(got >= n && !strcmp(r.err.data + got - n, want), "stderr:\n%s", r.err.data);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "policy", "init", "deny-all", NULL), 0);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "create", "--name", "box", "shell", w.workspace, NULL), 0);
    CU_ASSERT_STRING_EQUAL(r.out.data, "\xe2\x9c\x93 Created sandbox box\n");
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "create", "--name", "box", "shell", w.workspace, NULL),
                    CHECK_ERR);
    CU_ASSERT_STRING_EQUAL(r.err.data,
                           "ERROR: request failed: 409 Conflict: sandbox \"box\" already exists\n");
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "create", "shell", w.workspace, NULL), 0);
    CU_ASSERT_STRING_EQUAL(r.out.data, "\xe2\x9c\x93 Created sandbox shell-ws\n");
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "create", "--name", "bad_name", "shell", w.workspace, NULL),
                    CHECK_ERR);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "create", "--name", "x", "shell", "/nonexistent/ws", NULL),
                    CHECK_ERR);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "create", "--name", "y", "robot", w.workspace, NULL),
                    CHECK_ERR);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "ls", "-q", NULL), 0);
    CU_ASSERT_STRING_EQUAL(r.out.data, "box\nshell-ws\n");
    proc_result_free(&r);
    const char *const signed_out[] = {"FAKE_SBX_SIGNED_OUT=1", NULL};
    const char *const ls[] = {"ls", NULL};
    CU_ASSERT_EQUAL(tk_sbx_runv(&w, signed_out, ls, 0, &r), CHECK_ERR);
    CU_ASSERT_STRING_EQUAL(r.err.data,
                           "ERROR: Not authenticated to Docker\n\nSign in with: sbx login\n");
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
}

/* ---- exec ---- */

static void test_exec_status_and_errors(void)
{
    tk_sbx w;
    world_with_box(&w, "balanced");
    proc_result r;
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "exec", "nobox", "true", NULL), CHECK_ERR);
    CU_ASSERT_STRING_EQUAL(r.err.data, NO_SANDBOX_BLOCK);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "exec", "box", "sh", "-c", "pwd; exit 7", NULL), 7);
    UNIT_CHECK(!strncmp(r.out.data, w.workspace, strlen(w.workspace)), "default workdir: %s",
               r.out.data);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "exec", "-w", "/tmp", "box", "pwd", NULL), 0);
    CU_ASSERT_STRING_EQUAL(r.out.data, "/tmp\n");
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "exec", "box", "no-such-command-xyz", NULL), 127);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "exec", "box", NULL), CHECK_ERR);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "exec", "--bogus", "box", "true", NULL), CHECK_ERR);
    CU_ASSERT_STRING_EQUAL(r.err.data, "ERROR: unknown flag: --bogus\n");
    proc_result_free(&r);
    /* A stopped sandbox is started first. */
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "stop", "box", NULL), 0);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "ls", NULL), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out.data, " stopped "));
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "exec", "box", "true", NULL), 0);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "ls", NULL), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out.data, " running "));
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
}

static int has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
        if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
            return 1;
    return 0;
}

static void test_exec_environment(void)
{
    tk_sbx w;
    world_with_box(&w, "balanced");
    char *envfile = tk_path(w.state, "agent.env");
    tk_write(envfile, "# comment\nFROM_FILE=file-value\n\nOVERRIDDEN=file\n");
    /* tk_run passes its whole environment on, as an operator's shell would:
     * the fake itself must keep the caller's variables out. */
    char state_env[4200], uv_env[64] = "FAKE_UV_AGENT=/bin/echo";
    snprintf(state_env, sizeof state_env, "FAKE_SBX_STATE=%s", w.state);
    char *const env[] = {state_env, "BAND_API_KEY_USER=canary-user-key-0123456789",
                         "CALLER_ONLY=leaked", uv_env, NULL};
    char *const argv[] = {w.sbx, "exec", "-e", "FROM_E=e-value", "-e", "OVERRIDDEN=e",
                          "-e", "HTTP_PROXY=http://elsewhere:1", "--env-file", envfile,
                          "box", "env", NULL};
    tk_result out;
    tk_run(argv, env, 15000, &out);
    CU_ASSERT_EQUAL(out.status, 0);
    const char *text = out.output;
    UNIT_CHECK(!strstr(text, "BAND_API_KEY_USER") && !strstr(text, "canary-user-key"),
               "the user key reached the sandbox:\n%s", text);
    CU_ASSERT_FALSE(strstr(text, "CALLER_ONLY") != NULL);
    const char *proxy = strstr(text, "\nHTTPS_PROXY=http://127.0.0.1:");
    UNIT_CHECK(proxy != NULL, "no HTTPS_PROXY:\n%s", text);
    char line[128];
    if (proxy) {
        int port = atoi(proxy + strlen("\nHTTPS_PROXY=http://127.0.0.1:"));
        static const char *const vars[] = {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
                                           "https_proxy"};
        for (size_t i = 0; i < 4; i++) {
            snprintf(line, sizeof line, "%s=http://127.0.0.1:%d", vars[i], port);
            UNIT_CHECK(has_line(text, line), "missing %s", line);
        }
    }
    CU_ASSERT_TRUE(has_line(text, "NO_PROXY=gateway.docker.internal"));
    CU_ASSERT_TRUE(has_line(text, "no_proxy=gateway.docker.internal"));
    CU_ASSERT_TRUE(has_line(text, "FROM_E=e-value"));
    CU_ASSERT_TRUE(has_line(text, "FROM_FILE=file-value"));
    CU_ASSERT_TRUE(has_line(text, "OVERRIDDEN=e"));
    CU_ASSERT_TRUE(has_line(text, "FAKE_UV_AGENT=/bin/echo"));
    CU_ASSERT_TRUE(has_line(text, state_env));
    CU_ASSERT_TRUE(has_line(text, "USER=agent"));
    snprintf(line, sizeof line, "PATH=%s:/usr/local/bin:/usr/bin:/bin", w.bin_dir);
    UNIT_CHECK(has_line(text, line), "PATH is not the fake's first:\n%s", text);
    snprintf(line, sizeof line, "HOME=%s/sandboxes/box/home", w.state);
    CU_ASSERT_TRUE(has_line(text, line));
    tk_result_free(&out);
    free(envfile);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
}

static void test_fake_uv(void)
{
    tk_sbx w;
    world_with_box(&w, "balanced");
    char *script = tk_path(w.workspace, "agent.py");
    tk_write(script, "# /// script\n# dependencies = [\n#   \"band-sdk\",\n#   \"websockets>=16\",\n"
                     "# ]\n# ///\nprint('hi')\n");
    proc_result r;
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "exec", "box", "uv", "sync", "--script", "agent.py", NULL), 0);
    UNIT_CHECK(!strncmp(r.out.data, "Resolved 2 packages", 19), "sync: %s", r.out.data);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "exec", "box", "uv", "sync", "--script", "gone.py", NULL), 2);
    CU_ASSERT_TRUE(!strncmp(r.err.data, "error: ", 7));
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "exec", "box", "uv", "run", "agent.py", "a", "b", NULL), 2);
    UNIT_CHECK(strstr(r.err.data, "FAKE_UV_AGENT") != NULL, "no agent: %s", r.err.data);
    proc_result_free(&r);
    tk_sbx_setenv(&w, "FAKE_UV_AGENT=/bin/echo");
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "exec", "box", "uv", "run", "agent.py", "a", "b", NULL), 0);
    CU_ASSERT_STRING_EQUAL(r.out.data, "a b\n");
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "exec", "box", "uv", "run", "--script", "agent.py", "x",
                               NULL), 0);
    CU_ASSERT_STRING_EQUAL(r.out.data, "x\n");
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "exec", "box", "uv", "run", "gone.py", NULL), 2);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "exec", "box", "uv", "frobnicate", NULL), 2);
    proc_result_free(&r);
    free(script);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
}

/* ---- the proxy ---- */

static void test_proxy_and_policy_log(void)
{
    tk_sbx w;
    world_with_box(&w, "balanced");
    echo e;
    echo_start(&e);
    allow(&w, e.port);
    int proxy = proxy_port(&w);
    char target[64], buf[1024];
    snprintf(target, sizeof target, "127.0.0.1:%d", e.port);
    int fd = open_tunnel(proxy, target);
    CU_ASSERT_TRUE(echoes(fd, "ping\n", 2000));
    CU_ASSERT_TRUE(echoes(fd, "pong again\n", 2000));
    close(fd);
    /* Denied: the CONNECT still succeeds; the 403 comes inside the tunnel. */
    fd = open_tunnel(proxy, "blocked.example.com:443");
    send_text(fd, "GET / HTTP/1.1\r\nHost: blocked.example.com\r\n\r\n");
    int eof;
    recv_some(fd, buf, sizeof buf, sizeof buf, 3000, &eof);
    UNIT_CHECK(!strncmp(buf, "HTTP/1.1 403 Forbidden\r\n", 24) &&
                   strstr(buf, "\r\n\r\nBlocked by network policy: domain blocked.example.com:443\n"
                               "detail: no matching allow rule \xe2\x80\x94 blocked by default deny "
                               "policy\n"),
               "denied answer:\n%s", buf);
    CU_ASSERT_TRUE(eof);
    close(fd);
    /* An unallowed port of an allowed host is denied too. */
    snprintf(target, sizeof target, "127.0.0.1:%d", e.port == 65535 ? 1 : e.port + 1);
    fd = open_tunnel(proxy, target);
    send_text(fd, "hello\r\n\r\n");
    recv_some(fd, buf, sizeof buf, sizeof buf, 3000, &eof);
    CU_ASSERT_TRUE(!strncmp(buf, "HTTP/1.1 403 Forbidden", 22));
    close(fd);
    /* Plain HTTP through the proxy, denied: the 403 straight away. */
    fd = tcp_connect(proxy);
    send_text(fd, "GET http://blocked.example.com/x HTTP/1.1\r\nHost: blocked.example.com\r\n\r\n");
    recv_some(fd, buf, sizeof buf, sizeof buf, 3000, &eof);
    CU_ASSERT_TRUE(!strncmp(buf, "HTTP/1.1 403 Forbidden", 22));
    close(fd);
    proc_result r;
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "policy", "log", NULL), 0);
    const char *text = r.out.data;
    const char *allowed = strstr(text, "\nAllowed requests:\n");
    const char *blocked_row = strstr(text, "blocked.example.com");
    const char *allowed_row = allowed ? strstr(allowed, "127.0.0.1") : NULL;
    UNIT_CHECK(!strncmp(text, "Blocked requests:\nSANDBOX", 25) && allowed && blocked_row &&
                   blocked_row < allowed && allowed_row,
               "policy log:\n%s", text);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "LAST SEEN"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "default-deny"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "domain-allowed"));
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "policy", "log", "box", "--json", NULL), 0);
    cJSON *root = cJSON_Parse(r.out.data);
    cJSON *first_allowed = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "allowed"), 0);
    CU_ASSERT_EQUAL(cJSON_GetArraySize(cJSON_GetObjectItem(root, "blocked")), 3);
    CU_ASSERT_STRING_EQUAL(cJSON_GetStringValue(cJSON_GetObjectItem(first_allowed, "host")),
                           "127.0.0.1");
    CU_ASSERT_EQUAL(cJSON_GetNumberValue(cJSON_GetObjectItem(first_allowed, "count")), 1);
    cJSON_Delete(root);
    proc_result_free(&r);
    echo_stop(&e);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
}


/* ---- plain HTTP through the proxy, for a pooling client ---- */

/* A keep-alive HTTP server in a child process, as the fake Band's lws is:
 * it answers `Connection: keep-alive` and closes only when the request
 * said `Connection: close`. Each answer's body names whether the request
 * came in origin form with that header. */
static void keepalive_conn(int fd)
{
    char head[4096];
    size_t len = 0;
    for (;;) {
        ssize_t n = read(fd, head + len, sizeof head - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
        head[len] = '\0';
        char *end = strstr(head, "\r\n\r\n");
        if (!end)
            continue;
        int origin = head[0] == 'G' && strncmp(head, "GET /", 5) == 0;
        int closing = strstr(head, "\r\nConnection: close\r\n") != NULL;
        char answer[256];
        int alen = snprintf(answer, sizeof answer,
                            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n"
                            "Keep-Alive: timeout=5\r\n\r\n%s",
                            origin && closing ? "ok" : "no");
        if (send(fd, answer, (size_t)alen, MSG_NOSIGNAL) != alen || closing)
            break;
        len = 0;
    }
    close(fd);
}

static void keepalive_start(echo *e)
{
    int lfd = tk_listen_loopback(&e->port);
    e->pid = fork_server();
    if (e->pid == 0) {
        for (;;) {
            int c = accept(lfd, NULL, NULL);
            if (c >= 0)
                keepalive_conn(c);
        }
    }
    close(lfd);
}

typedef struct seen_headers {
    int close, keep_alive;
} seen_headers;

static size_t on_header(char *line, size_t size, size_t n, void *ud)
{
    seen_headers *h = ud;
    size_t len = size * n;
    if (len >= 17 && !strncasecmp(line, "Connection: close", 17))
        h->close++;
    if (len >= 11 && (!strncasecmp(line, "Keep-Alive:", 11) ||
                      (len >= 22 && !strncasecmp(line, "Connection: keep-alive", 22))))
        h->keep_alive++;
    return len;
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
    char *body = ud;
    size_t len = size * n, have = strlen(body);
    if (have + len < 16) {
        memcpy(body + have, data, len);
        body[have + len] = '\0';
    }
    return len;
}

/* One libcurl easy handle reused for several requests, as a pooling
 * client (httpx) does: every answer must tell it the connection closes,
 * so it never sends a request into a connection the proxy is ending. */
static void test_plain_http_pooling_client(void)
{
    tk_sbx w;
    world_with_box(&w, "balanced");
    echo e;
    keepalive_start(&e);
    allow(&w, e.port);
    char proxy[64], url[96];
    snprintf(proxy, sizeof proxy, "http://127.0.0.1:%d", proxy_port(&w));
    snprintf(url, sizeof url, "http://127.0.0.1:%d/x", e.port);
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PROXY, proxy);
    curl_easy_setopt(h, CURLOPT_NOPROXY, "");
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    for (int i = 0; i < 5; i++) {
        seen_headers seen = {0, 0};
        char body[16] = "";
        long status = 0, connects = -1;
        curl_easy_setopt(h, CURLOPT_HEADERDATA, &seen);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
        CURLcode rc = curl_easy_perform(h);
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects);
        UNIT_CHECK(rc == CURLE_OK && status == 200 && !strcmp(body, "ok"),
                   "request %d: curl %d, HTTP %ld, body '%s'", i, rc, status, body);
        UNIT_CHECK(seen.close == 1 && seen.keep_alive == 0,
                   "request %d: %d 'Connection: close', %d keep-alive headers", i, seen.close,
                   seen.keep_alive);
        /* Told the connection closes, the client opened a fresh one each time. */
        CU_ASSERT_EQUAL(connects, 1);
    }
    curl_easy_cleanup(h);
    echo_stop(&e);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
}

static void test_net_cut(void)
{
    tk_sbx w;
    world_with_box(&w, "balanced");
    echo e;
    echo_start(&e);
    allow(&w, e.port);
    int proxy = proxy_port(&w);
    char target[64], buf[256];
    snprintf(target, sizeof target, "127.0.0.1:%d", e.port);
    int fd = open_tunnel(proxy, target);
    CU_ASSERT_TRUE(echoes(fd, "before\n", 2000));
    proc_result r;
    int64_t t0 = clock_mono_ms();
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "_fault", "net-cut", "1.5", NULL), 0);
    proc_result_free(&r);
    UNIT_CHECK(clock_mono_ms() - t0 < 1000, "net-cut did not return at once");
    int eof;
    recv_some(fd, buf, sizeof buf, sizeof buf, 1000, &eof);
    UNIT_CHECK(eof, "the open tunnel survived the cut");
    close(fd);
    /* During the cut: accepted, then closed at once, no 200. */
    fd = tcp_connect(proxy);
    send_text(fd, "CONNECT 127.0.0.1:1 HTTP/1.1\r\n\r\n");
    recv_some(fd, buf, sizeof buf, sizeof buf, 1000, &eof);
    UNIT_CHECK(eof && buf[0] == '\0', "during the cut: eof %d, got '%s'", eof, buf);
    close(fd);
    while (clock_mono_ms() - t0 < 1800)
        nap_ms(50);
    fd = open_tunnel(proxy, target);
    CU_ASSERT_TRUE(echoes(fd, "after\n", 2000));
    close(fd);
    echo_stop(&e);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
}

/* Linux's state letter of a process (T = stopped), from /proc. */
static char proc_state(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    char *text = tk_read(path, NULL);
    char *paren = text ? strrchr(text, ')') : NULL;
    char state = paren && paren[1] == ' ' ? paren[2] : '?';
    free(text);
    return state;
}

static pid_t wait_pidfile(const char *path)
{
    for (int i = 0; i < 100; i++) {
        char *text = tk_read(path, NULL);
        pid_t pid = text ? (pid_t)atol(text) : 0;
        free(text);
        if (pid > 1)
            return pid;
        nap_ms(30);
    }
    return 0;
}

static void test_freeze(void)
{
    tk_sbx w;
    world_with_box(&w, "balanced");
    echo e;
    echo_start(&e);
    allow(&w, e.port);
    int proxy = proxy_port(&w);
    char *pidfile = tk_path(w.state, "agent.pid");
    char script[1200];
    snprintf(script, sizeof script, "echo $$ > %s; exec sleep 30", pidfile);
    proc_result r;
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "exec", "-d", "box", "sh", "-c", script, NULL), 0);
    proc_result_free(&r);
    pid_t agent = wait_pidfile(pidfile);
    CU_ASSERT_FATAL(agent > 1);
    char target[64];
    snprintf(target, sizeof target, "127.0.0.1:%d", e.port);
    int fd = open_tunnel(proxy, target);
    CU_ASSERT_TRUE(echoes(fd, "awake\n", 2000));
    int64_t t0 = clock_mono_ms();
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "_fault", "freeze", "1.2", NULL), 0);
    proc_result_free(&r);
    /* SIGSTOP takes effect when the kernel next looks at the process. */
    for (int i = 0; i < 20 && proc_state(agent) != 'T'; i++)
        nap_ms(10);
    UNIT_CHECK(proc_state(agent) == 'T', "agent state %c during the freeze", proc_state(agent));
    char buf[64];
    int eof;
    send_text(fd, "asleep\n");
    recv_some(fd, buf, sizeof buf, 7, 400, &eof);
    UNIT_CHECK(buf[0] == '\0' && !eof, "a frozen tunnel moved bytes: '%s'", buf);
    /* After the freeze the stalled bytes arrive and the agent runs again. */
    recv_some(fd, buf, sizeof buf, 7, 3000, &eof);
    UNIT_CHECK(!strcmp(buf, "asleep\n"), "after the freeze: '%s'", buf);
    UNIT_CHECK(clock_mono_ms() - t0 >= 1100, "the freeze ended early");
    char state = proc_state(agent);
    UNIT_CHECK(state == 'S' || state == 'R', "agent state %c after the freeze", state);
    close(fd);
    echo_stop(&e);
    free(pidfile);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
    UNIT_CHECK(proc_state(agent) == '?' || proc_state(agent) == 'Z', "the -d agent survived");
}

static int count_sessions(tk_sbx *w)
{
    proc_result r;
    tk_sbx_run(w, &r, "_ps", NULL);
    int n = 0;
    for (const char *p = r.out.data; (p = strstr(p, "session ")) != NULL; p++)
        n++;
    proc_result_free(&r);
    return n;
}

static void test_daemon_stop_ends_sessions(void)
{
    tk_sbx w;
    world_with_box(&w, "balanced");
    const char *const argv[] = {w.sbx, "exec", "box", "sleep", "30", NULL};
    char *log = tk_path(w.state, "exec.log");
    proc_env env = {NULL, w.env};
    proc_detached d;
    char err[ERR_BUFSZ];
    CU_ASSERT_EQUAL_FATAL(proc_launch_detached(argv, NULL, &env, log, &d, err), ERR_OK);
    proc_result r;
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "exec", "-d", "box", "sleep", "30", NULL), 0);
    proc_result_free(&r);
    for (int i = 0; i < 100 && count_sessions(&w) < 2; i++)
        nap_ms(30);
    CU_ASSERT_EQUAL_FATAL(count_sessions(&w), 2);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "daemon", "stop", NULL), 0);
    char want[4200];
    snprintf(want, sizeof want,
             "Stopping daemon at %s/sandboxd.sock...\n\xe2\x9c\x93 Daemon stopped successfully\n",
             w.state);
    CU_ASSERT_STRING_EQUAL(r.out.data, want);
    proc_result_free(&r);
    int ended = 0;
    for (int i = 0; i < 100 && !ended; i++) {
        ended = !plat_proc_alive(d.pid, d.start_token);
        nap_ms(30);
    }
    UNIT_CHECK(ended, "the exec session outlived daemon stop");
    char *text = tk_read(log, NULL);
    UNIT_CHECK(text && strstr(text, "ERROR: exec session ended: sandbox 'box' was stopped"),
               "exec said: %s", text ? text : "(nothing)");
    free(text);
    CU_ASSERT_EQUAL(count_sessions(&w), 0);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "daemon", "status", NULL), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out.data, "Status: stopped"));
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "ls", NULL), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out.data, " stopped "));
    proc_result_free(&r);
    free(log);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
}


/* ---- fidelity knobs: the agent command, the killing stop, the CA ---- */

/* FAKE_UV_AGENT_CMD (band-smoke rehearse --agent): a shell command run
 * from agent.py's folder, the script's arguments appended. */
static void test_fake_uv_agent_command(void)
{
    tk_sbx w;
    world_with_box(&w, "balanced");
    char *sub = tk_path(w.workspace, "sub");
    char *script = tk_path(sub, "agent.py");
    CU_ASSERT_EQUAL(mkdir(sub, 0700), 0);
    tk_write(script, "print('hi')\n");
    tk_sbx_setenv(&w, "FAKE_UV_AGENT=/bin/false");
    tk_sbx_setenv(&w, "FAKE_UV_AGENT_CMD=echo \"in $(basename $(pwd)) with\"");
    proc_result r;
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "exec", "box", "uv", "run", "--script", "sub/agent.py",
                               "--sdk-version", NULL), 0);
    UNIT_CHECK(!strcmp(r.out.data, "in sub with --sdk-version\n"), "command said: '%s' %s",
               r.out.data, r.err.data);
    proc_result_free(&r);
    /* A `uv` in the command is never this fake again (no loop): with no
     * real uv on the sandbox's PATH it is simply not found. */
    tk_sbx_setenv(&w, "FAKE_UV_AGENT_CMD=command -v uv || echo no-uv; echo cmd=$FAKE_UV_AGENT_CMD");
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "exec", "box", "uv", "run", "sub/agent.py", NULL), 0);
    UNIT_CHECK(strstr(r.out.data, "/fake-sbx-bin/uv") == NULL && strstr(r.out.data, "cmd=\n"),
               "the fake uv is still reachable from the command: %s", r.out.data);
    proc_result_free(&r);
    free(script);
    free(sub);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
}

/* A session that traps SIGTERM and writes a file when it gets one: the
 * graceful stop lets it write, FAKE_SBX_STOP_KILL=1 does not. */
static void stop_with(int kill_mode)
{
    tk_sbx w;
    world_with_box(&w, "balanced");
    if (kill_mode)
        tk_sbx_setenv(&w, "FAKE_SBX_STOP_KILL=1");
    char *mark = tk_path(w.workspace, "got-term");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "trap 'echo term > %s; exit 0' TERM; while :; do sleep 0.05; done",
             mark);
    proc_result r;
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "exec", "-d", "box", "sh", "-c", cmd, NULL), 0);
    proc_result_free(&r);
    for (int i = 0; i < 100 && count_sessions(&w) < 1; i++)
        nap_ms(30);
    nap_ms(200); /* the trap is set */
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "daemon", "stop", NULL), 0);
    proc_result_free(&r);
    char *text = tk_read(mark, NULL);
    if (kill_mode)
        UNIT_CHECK(text == NULL, "FAKE_SBX_STOP_KILL=1: the session still saw SIGTERM");
    else
        UNIT_CHECK(text && !strcmp(text, "term\n"), "graceful stop: no SIGTERM seen");
    CU_ASSERT_EQUAL(count_sessions(&w), 0);
    free(text);
    free(mark);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
}

static void test_daemon_stop_graceful_or_kill(void)
{
    stop_with(0);
    stop_with(1);
}

/* FAKE_SBX_CA_FILE: the sandbox trusts the TLS world's CA. */
static void test_exec_trusts_ca(void)
{
    tk_sbx w;
    world_with_box(&w, "balanced");
    tk_sbx_setenv(&w, "FAKE_SBX_CA_FILE=/tmp/some-ca.pem");
    proc_result r;
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "exec", "box", "env", NULL), 0);
    CU_ASSERT_TRUE(has_line(r.out.data, "SSL_CERT_FILE=/tmp/some-ca.pem"));
    CU_ASSERT_TRUE(has_line(r.out.data, "SMOKE_CA_FILE=/tmp/some-ca.pem"));
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
}

static void test_daemon_commands(void)
{
    tk_sbx w;
    tk_sbx_setup(&w, NULL);
    proc_result r;
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "daemon", "stop", NULL), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out.data, "Daemon is not running"));
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "daemon", "start", "-d", "--policy", "balanced", NULL), 0);
    CU_ASSERT_TRUE(!strncmp(r.out.data, "Starting sandboxd daemon...\nDaemon started (PID: ", 48));
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "daemon", "start", "-d", NULL), 0);
    CU_ASSERT_TRUE(!strncmp(r.out.data, "Daemon is already running at ", 29));
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "daemon", "status", NULL), 0);
    char want[4200];
    snprintf(want, sizeof want, "Status: running\nSocket: %s/sandboxd.sock\n", w.state);
    CU_ASSERT_STRING_EQUAL(r.out.data, want);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "daemon", "restart", NULL), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out.data, "Daemon stopped successfully\nStarting sandboxd"));
    proc_result_free(&r);
    /* --policy initialised the policy: create works. */
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "create", "--name", "box", "shell", w.workspace, NULL), 0);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
}

static void test_rm_and_reset(void)
{
    tk_sbx w;
    world_with_box(&w, "balanced");
    proc_result r;
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "rm", "box", NULL), CHECK_ERR);
    UNIT_CHECK(!strncmp(r.err.data, "ERROR: stdin is not a terminal", 30), "%s", r.err.data);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "ls", "-q", NULL), 0);
    CU_ASSERT_STRING_EQUAL(r.out.data, "box\n");
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "rm", "--force", "box", NULL), 0);
    CU_ASSERT_STRING_EQUAL(r.out.data, "\xe2\x9c\x93 Removed sandbox box\n");
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "rm", "-f", "box", NULL), CHECK_ERR);
    CU_ASSERT_TRUE(!strncmp(r.err.data, "ERROR: no sandbox named 'box'", 29));
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "create", "--name", "two", "shell", w.workspace, NULL), 0);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "reset", NULL), CHECK_ERR);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "reset", "-f", NULL), 0);
    CU_ASSERT_STRING_EQUAL(r.out.data, "\xe2\x9c\x93 Reset complete!\n\nSummary:\n"
                                       "  \xe2\x80\xa2 Sandboxes stopped: 1\n");
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "ls", "-q", NULL), 0);
    CU_ASSERT_STRING_EQUAL(r.out.data, "");
    proc_result_free(&r);
    /* The policy went with it. */
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "create", "--name", "x", "shell", w.workspace, NULL),
                    CHECK_ERR);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
}

static void test_policy_commands(void)
{
    tk_sbx w;
    world_with_box(&w, "balanced");
    const char *const again[] = {"policy", "init", "allow-all", NULL};
    CU_ASSERT_EQUAL(run_status(&w, again), CHECK_ERR);
    const char *const add[] = {"policy", "allow", "network", "--sandbox", "box",
                               "a.test, *.b.test,c.test:8443", NULL};
    CU_ASSERT_EQUAL(run_status(&w, add), 0);
    static const struct {
        const char *target;
        int status;
    } checks[] = {
        {"a.test", 0},          {"https://a.test/path", 0}, {"x.b.test", 0},
        {"b.test", 1},          {"c.test:8443", 0},         {"c.test", 1},
        {"pypi.org", 0},        {"evil.test", 1},
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        const char *const args[] = {"policy", "check", "network", "--sandbox", "box",
                                    checks[i].target, NULL};
        proc_result r;
        int status = tk_sbx_runv(&w, NULL, args, 0, &r);
        UNIT_CHECK(status == checks[i].status &&
                       !strncmp(r.out.data, status ? "Denied: " : "Allowed: ", status ? 8 : 9),
                   "check %s: %d %s", checks[i].target, status, r.out.data);
        proc_result_free(&r);
    }
    /* Scoped rules do not apply to other sandboxes' checks. */
    const char *const global[] = {"policy", "check", "network", "a.test", NULL};
    CU_ASSERT_EQUAL(run_status(&w, global), 1);
    proc_result r;
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "policy", "deny", "network", "--sandbox", "box", "a.test",
                               NULL), CHECK_ERR);
    UNIT_CHECK(strstr(r.err.data, "deny: \"a.test\" conflicts with existing allow rule \"") != NULL,
               "%s", r.err.data);
    proc_result_free(&r);
    const char *const deny[] = {"policy", "deny", "network", "pypi.org", NULL};
    CU_ASSERT_EQUAL(run_status(&w, deny), 0);
    const char *const denied[] = {"policy", "check", "network", "pypi.org", NULL};
    CU_ASSERT_EQUAL(run_status(&w, denied), 1); /* deny beats the built-in allow */
    const char *const ghost[] = {"policy", "allow", "network", "--sandbox", "ghost", "x.test", NULL};
    CU_ASSERT_EQUAL(run_status(&w, ghost), CHECK_ERR);
    const char *const blank[] = {"policy", "allow", "network", "a test", NULL};
    CU_ASSERT_EQUAL(run_status(&w, blank), CHECK_ERR);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "policy", "ls", NULL), 0);
    UNIT_CHECK(!strncmp(r.out.data, "POLICY", 6) && strstr(r.out.data, "local-policy") &&
                   strstr(r.out.data, "box"),
               "%s", r.out.data);
    proc_result_free(&r);
    const char *const reset[] = {"policy", "reset", NULL};
    CU_ASSERT_EQUAL(run_status(&w, reset), CHECK_ERR);
    const char *const reset_f[] = {"policy", "reset", "-f", NULL};
    CU_ASSERT_EQUAL(run_status(&w, reset_f), 0);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "daemon", "status", NULL), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out.data, "Status: stopped"));
    proc_result_free(&r);
    CU_ASSERT_EQUAL(run_status(&w, global), 1); /* nothing is allowed any more */
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
}

static void test_hang_and_vanish(void)
{
    tk_sbx w;
    world_with_box(&w, "balanced");
    const char *const hang[] = {"_fault", "hang", "ls", NULL};
    CU_ASSERT_EQUAL(run_status(&w, hang), 0);
    const char *const ls[] = {"ls", "-q", NULL};
    proc_result r;
    int64_t t0 = clock_mono_ms();
    CU_ASSERT_EQUAL(tk_sbx_runv(&w, NULL, ls, 700, &r), -1);
    UNIT_CHECK(clock_mono_ms() - t0 < 3000, "the hang was not killed in time");
    proc_result_free(&r);
    const char *const version[] = {"version", NULL};
    CU_ASSERT_EQUAL(run_status(&w, version), 0); /* only ls hangs */
    const char *const off[] = {"_fault", "hang", "off", NULL};
    CU_ASSERT_EQUAL(run_status(&w, off), 0);
    CU_ASSERT_EQUAL(tk_sbx_runv(&w, NULL, ls, 0, &r), 0);
    CU_ASSERT_STRING_EQUAL(r.out.data, "box\n");
    proc_result_free(&r);
    /* Two words name a subcommand. */
    const char *const two[] = {"_fault", "hang", "daemon status", NULL};
    CU_ASSERT_EQUAL(run_status(&w, two), 0);
    const char *const status[] = {"daemon", "status", NULL};
    CU_ASSERT_EQUAL(tk_sbx_runv(&w, NULL, status, 500, &r), -1);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(run_status(&w, off), 0);
    const char *const vanish[] = {"_fault", "vanish", "box", NULL};
    CU_ASSERT_EQUAL(run_status(&w, vanish), 0);
    CU_ASSERT_EQUAL(tk_sbx_runv(&w, NULL, ls, 0, &r), 0);
    CU_ASSERT_STRING_EQUAL(r.out.data, "");
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "exec", "box", "true", NULL), CHECK_ERR);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err.data, "no sandbox named 'box'"));
    proc_result_free(&r);
    const char *const back[] = {"_fault", "vanish", "off", NULL};
    CU_ASSERT_EQUAL(run_status(&w, back), 0);
    CU_ASSERT_EQUAL(tk_sbx_runv(&w, NULL, ls, 0, &r), 0);
    CU_ASSERT_STRING_EQUAL(r.out.data, "box\n");
    proc_result_free(&r);
    const char *const nodaemon[] = {"_fault", "net-cut", "1", NULL};
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "daemon", "stop", NULL), 0);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(run_status(&w, nodaemon), CHECK_ERR);
    const char *const badfault[] = {"_fault", "meteor", "1", NULL};
    CU_ASSERT_EQUAL(run_status(&w, badfault), CHECK_ERR);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
}

/* Issue 9 finding 11: a test killed by ctest's timeout (SIGKILL, no
 * cleanup runs) must not leave its echo server looping forever. Here a
 * stand-in test process starts one and is killed; the echo must follow. */
static void test_echo_dies_with_its_test(void)
{
    int p[2];
    if (pipe(p) != 0)
        abort();
    pid_t test = fork();
    if (test == 0) {
        echo e;
        echo_start(&e);
        ssize_t w = write(p[1], &e.pid, sizeof e.pid);
        (void)w;
        pause();
        _exit(0);
    }
    close(p[1]);
    pid_t echo_pid = 0;
    UNIT_CHECK(read(p[0], &echo_pid, sizeof echo_pid) == (ssize_t)sizeof echo_pid &&
                   echo_pid > 1, "no echo pid");
    close(p[0]);
    kill(test, SIGKILL);
    waitpid(test, NULL, 0);
    int gone = 0;
    for (int i = 0; i < 150 && !gone; i++) {
        gone = echo_pid > 1 && !plat_proc_alive(echo_pid, plat_proc_start_token(echo_pid));
        if (!gone) {
            struct timespec ts = {0, 20 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    UNIT_CHECK(gone, "the echo server %ld outlived its killed test by 3 s", (long)echo_pid);
    if (!gone && echo_pid > 1)
        kill(echo_pid, SIGKILL);
}


const unit_case unit_cases[] = {
    {"version_outputs", test_version_outputs},
    {"refuses_without_state", test_refuses_without_state},
    {"banner_and_autostart", test_banner_and_autostart},
    {"ls_outputs", test_ls_outputs},
    {"create_rules", test_create_rules},
    {"exec_status_and_errors", test_exec_status_and_errors},
    {"exec_environment", test_exec_environment},
    {"fake_uv", test_fake_uv},
    {"proxy_and_policy_log", test_proxy_and_policy_log},
    {"plain_http_pooling_client", test_plain_http_pooling_client},
    {"net_cut", test_net_cut},
    {"freeze", test_freeze},
    {"daemon_stop_ends_sessions", test_daemon_stop_ends_sessions},
    {"daemon_commands", test_daemon_commands},
    {"fake_uv_agent_command", test_fake_uv_agent_command},
    {"daemon_stop_graceful_or_kill", test_daemon_stop_graceful_or_kill},
    {"exec_trusts_ca", test_exec_trusts_ca},
    {"rm_and_reset", test_rm_and_reset},
    {"policy_commands", test_policy_commands},
    {"hang_and_vanish", test_hang_and_vanish},
    {"echo_dies_with_its_test", test_echo_dies_with_its_test},
    {NULL, NULL},
};
