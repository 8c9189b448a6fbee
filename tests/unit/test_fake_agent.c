/* fake_agent: the C stand-in for the band-sdk agent (tests/fakes/agent),
 * driven end to end against the fake Band server.
 *
 * Each case builds its own world: a fake Band (tk_band), the user's side
 * provisioned over REST (an agent with a description, a room, the agent
 * added to it), and fake-agent as a child whose environment alone holds
 * the agent key and whose stderr is its agent.log. The user then watches
 * the room over Phoenix like the probe does, sends markers and injects
 * faults at the fake. Every wait is bounded; teardown kills the child if
 * it is still there (and PDEATHSIG does if the test itself dies).
 *
 * Measured numbers (readiness, round trip, reconnect) are printed with a
 * "measured:" prefix for the report.
 */
#include "band_rest.h"
#include "clock.h"
#include "phoenix.h"
#include "policy.h"
#include "redact.h"
#include "tk.h"
#include "tk_band.h"
#include "tk_run.h"
#include "tk_wait.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/rand.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define READY_TIMEOUT_MS 15000
#define REPLY_TIMEOUT_MS 10000
#define RECONNECT_TIMEOUT_MS 15000
#define EXIT_TIMEOUT_MS 5000
#define POLL_MS 10
#define READY_LINE "INFO band.agent: Agent started: "
#define DISCONNECT_LINE "WARNING band.platform.link: WebSocket disconnected: "
#define RECONNECT_LINE "INFO band.platform.link: WebSocket reconnected \u2014 reconciling room state"
#define SHUTDOWN_LINE "Event loop shutting down! reason=Signal received"

typedef struct world {
    tk_band band;
    band_client *user;
    band_new_agent agent;
    char room[BAND_ID_SZ];
    char topic[BAND_ID_SZ + 16];
    char *dir;
    char *log_path;
    pid_t pid;            /* fake-agent; 0 once reaped */
    int exit_status;      /* once reaped */
    phx_client *observer; /* the user watching the room */
    cJSON *seen;          /* what the observer got: [{"event", "payload"}] */
} world;

/* ---- small helpers ------------------------------------------------------ */

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void random_hex(char *out, size_t nbytes)
{
    unsigned char b[32];
    if (nbytes > sizeof b || RAND_bytes(b, (int)nbytes) != 1)
        abort();
    for (size_t i = 0; i < nbytes; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* The probe's token: 12 lowercase hex characters. */
static void new_token(char token[13])
{
    random_hex(token, 6);
}

static char *file_text(const char *path)
{
    char *text = tk_read(path, NULL);
    return text ? text : strdup("");
}

static char *log_text(const world *w)
{
    return file_text(w->log_path);
}

/* Offset of the first `needle` at or after byte `from` of the file,
 * waiting up to timeout_ms for it; -1 when it never came. */
static long wait_file(const char *path, const char *needle, long from, int timeout_ms)
{
    int64_t deadline = clock_mono_ms() + timeout_ms;
    for (;;) {
        char *text = file_text(path);
        long len = (long)strlen(text);
        const char *hit = from <= len ? strstr(text + from, needle) : NULL;
        long at = hit ? (long)(hit - text) : -1;
        free(text);
        if (at >= 0 || clock_mono_ms() >= deadline)
            return at;
        nap_ms(POLL_MS);
    }
}

/* The same in the agent's log. */
static long wait_log(const world *w, const char *needle, long from, int timeout_ms)
{
    return wait_file(w->log_path, needle, from, timeout_ms);
}

static int log_count(const world *w, const char *needle)
{
    char *text = log_text(w);
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    free(text);
    return n;
}

static long log_size(const world *w)
{
    char *text = log_text(w);
    long n = (long)strlen(text);
    free(text);
    return n;
}

static void dump_log(const world *w)
{
    char *text = log_text(w);
    fprintf(stderr, "---- agent.log ----\n%s---- end ----\n", text);
    free(text);
}

/* ---- the user's side ---------------------------------------------------- */

static int provision(world *w, const char *description)
{
    char err[ERR_BUFSZ], name[64], hex[9];
    band_options o = band_options_default();
    if (band_client_new(w->band.rest_url, w->band.user_key, &o, &w->user, err) != ERR_OK)
        return UNIT_CHECK(0, "user client: %s", err), -1;
    random_hex(hex, 4);
    snprintf(name, sizeof name, "e2e-band-%s-sandbox", hex);
    if (band_register_agent(w->user, name, description, &w->agent, err) != ERR_OK ||
        band_create_chat(w->user, "Sandbox smoke \u2014 test", w->room, err) != ERR_OK ||
        band_add_participant(w->user, w->room, w->agent.id, NULL, err) != ERR_OK)
        return UNIT_CHECK(0, "provisioning: %s", err), -1;
    snprintf(w->topic, sizeof w->topic, "chat_room:%s", w->room);
    return 0;
}

static int world_up(world *w, const char *description)
{
    memset(w, 0, sizeof *w);
    w->seen = cJSON_CreateArray();
    w->dir = tk_tmpdir("fake-agent");
    w->log_path = tk_path(w->dir, "agent.log");
    if (!UNIT_CHECK(tk_band_start(&w->band, NULL) == 0, "fake Band starts"))
        return -1;
    return provision(w, description);
}

/* ---- the agent child ----------------------------------------------------- */

/* The child: agent.log as stdout and stderr, the key in its environment
 * only, extra "K=V" knobs, and death with the test. */
static void exec_agent(const world *w, const char *log_path, char *const extra_env[])
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
        _exit(126);
    close(fd);
    setenv("BAND_AGENT_ID", w->agent.id, 1);
    setenv("BAND_API_KEY", w->agent.api_key, 1);
    setenv("BAND_REST_URL", w->band.rest_url, 1);
    setenv("BAND_WS_URL", w->band.ws_url, 1);
    for (int i = 0; extra_env && extra_env[i]; i++) {
        char name[64];
        const char *eq = strchr(extra_env[i], '=');
        snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - extra_env[i]) : 0, extra_env[i]);
        if (eq)
            setenv(name, eq + 1, 1);
    }
    char *bin = tk_bin("fake-agent");
    char *argv[] = {bin, NULL};
    execv(bin, argv);
    _exit(127);
}

static pid_t spawn_agent(const world *w, const char *log_path, char *const extra_env[])
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        abort();
    if (pid == 0)
        exec_agent(w, log_path, extra_env);
    return pid;
}

static void agent_spawn(world *w, char *const extra_env[])
{
    w->pid = spawn_agent(w, w->log_path, extra_env);
}

/* Starts the agent and waits for its readiness line; 0 when ready. */
static int agent_start(world *w, char *const extra_env[])
{
    int64_t t0 = clock_mono_ms();
    agent_spawn(w, extra_env);
    long at = wait_log(w, READY_LINE, 0, READY_TIMEOUT_MS);
    if (!UNIT_CHECK(at >= 0, "readiness line within %d ms", READY_TIMEOUT_MS)) {
        dump_log(w);
        return -1;
    }
    printf("\n  measured: start to readiness %lld ms\n", (long long)(clock_mono_ms() - t0));
    return 0;
}

/* Reaps a child within timeout_ms: its exit status (128 + signal), or
 * -1 when it is still running. */
static int wait_pid(pid_t pid, int timeout_ms)
{
    int status = tk_wait_child(pid, timeout_ms);
    return status >= 0 ? status : -1;
}

/* Waits for the agent to end; its exit status, or -1 while it runs. */
static int agent_wait(world *w, int timeout_ms)
{
    if (w->pid <= 0)
        return w->exit_status;
    int status = wait_pid(w->pid, timeout_ms);
    if (status >= 0) {
        w->pid = 0;
        w->exit_status = status;
    }
    return status;
}

static int agent_alive(world *w)
{
    return w->pid > 0 && agent_wait(w, 0) < 0;
}

/* Every case ends the agent with SIGTERM: the exit status then also
 * carries LeakSanitizer's verdict in a sanitized build, and whatever a
 * sanitizer printed is in agent.log. */
static void agent_finish(world *w)
{
    if (agent_alive(w)) {
        kill(w->pid, SIGTERM);
        int status = agent_wait(w, EXIT_TIMEOUT_MS);
        UNIT_CHECK(status == 0, "exit 0 at the end of the case, got %d", status);
    }
    if (w->pid > 0) {
        kill(w->pid, SIGKILL);
        agent_wait(w, EXIT_TIMEOUT_MS);
    }
    static const char *const reports[] = {"AddressSanitizer", "LeakSanitizer", "runtime error:"};
    for (size_t i = 0; w->log_path && i < 3; i++)
        if (!UNIT_CHECK(log_count(w, reports[i]) == 0, "no %s report in agent.log", reports[i]))
            dump_log(w);
}

static void world_down(world *w)
{
    agent_finish(w);
    phx_client_free(w->observer);
    band_client_free(w->user);
    tk_band_stop(&w->band);
    cJSON_Delete(w->seen);
    redact_clear(); /* this case's keys: the registry holds only REDACT_MAX_SECRETS */
    if (w->dir)
        tk_rmtree(w->dir);
    free(w->dir);
    free(w->log_path);
}

/* ---- the observer (the probe's reply capture) ---------------------------- */

static void observer_on_push(const char *topic, const char *event, const cJSON *payload,
                             void *ud)
{
    (void)topic;
    cJSON *entry = cJSON_CreateObject();
    cJSON_AddStringToObject(entry, "event", event);
    cJSON_AddItemToObject(entry, "payload", cJSON_Duplicate(payload, 1));
    cJSON_AddItemToArray(ud, entry);
}

static int observer_start(world *w)
{
    char err[ERR_BUFSZ];
    phx_options o;
    phx_options_init(&o);
    o.ws_url = w->band.ws_url;
    o.api_key = w->band.user_key;
    o.on_push = observer_on_push;
    o.ud = w->seen;
    if (phx_client_new(&o, &w->observer, err) != ERR_OK || phx_connect(w->observer, err) != ERR_OK ||
        phx_join(w->observer, w->topic, 0, err) != ERR_OK)
        return UNIT_CHECK(0, "observer joins %s: %s", w->topic, err), -1;
    return 0;
}

static unsigned observer_disconnects(const world *w)
{
    phx_stats st;
    phx_stats_get(w->observer, &st);
    return st.disconnects;
}

/* Services the observer until it has lost its socket more than `lost`
 * times in all and is back in the room: a fault at the fake drops the
 * user's socket too, and pushes sent before it rejoins never reach it. */
static int observer_back(world *w, unsigned lost)
{
    char err[ERR_BUFSZ];
    int64_t deadline = clock_mono_ms() + RECONNECT_TIMEOUT_MS;
    while ((observer_disconnects(w) < lost || !phx_is_joined(w->observer, w->topic)) &&
           clock_mono_ms() < deadline)
        phx_service(w->observer, 50, err);
    return UNIT_CHECK(observer_disconnects(w) >= lost && phx_is_joined(w->observer, w->topic),
                      "observer is in the room") ? 0 : -1;
}

static int observer_ready(world *w)
{
    return observer_back(w, 0);
}

static const char *str_at(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* The agent's delivery record of message `mid` in a message_updated, or NULL. */
static const cJSON *delivery_of(const world *w, const cJSON *entry, const char *mid)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(entry, "payload");
    if (strcmp(str_at(entry, "event"), "message_updated") != 0 || strcmp(str_at(p, "id"), mid))
        return NULL;
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(p, "metadata");
    return cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(meta, "delivery_status"), w->agent.id);
}

static int saw_status(const world *w, const char *mid, const char *status)
{
    const cJSON *entry;
    cJSON_ArrayForEach(entry, w->seen) {
        const cJSON *d = delivery_of(w, entry, mid);
        if (d && strcmp(str_at(d, "status"), status) == 0)
            return 1;
    }
    return 0;
}

/* The probe's buffer rule: a text message_created from the agent. */
static int saw_reply(const world *w, const char *expect)
{
    const cJSON *entry;
    cJSON_ArrayForEach(entry, w->seen) {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(entry, "payload");
        if (strcmp(str_at(entry, "event"), "message_created") == 0 &&
            strcmp(str_at(p, "sender_type"), "Agent") == 0 &&
            strcmp(str_at(p, "sender_id"), w->agent.id) == 0 &&
            strstr(str_at(p, "content"), expect))
            return 1;
    }
    return 0;
}

/* Services the observer until message `mid` shows `status` (and, when
 * `reply` is not NULL, the agent's reply holding it was seen). */
static int observe(world *w, const char *mid, const char *status, const char *reply)
{
    char err[ERR_BUFSZ];
    int64_t deadline = clock_mono_ms() + REPLY_TIMEOUT_MS;
    int done = 0;
    while (!done && clock_mono_ms() < deadline) {
        phx_service(w->observer, 50, err);
        done = saw_status(w, mid, status) && (!reply || saw_reply(w, reply));
    }
    return done;
}

/* What the user's REST listing shows: 1 when message `mid` has `status`
 * for the agent and the agent's reply containing `reply` is there. */
static int rest_shows(world *w, const char *mid, const char *status, const char *reply)
{
    char path[BAND_ID_SZ + 64];
    long http = 0;
    snprintf(path, sizeof path, "/api/v1/me/chats/%s/messages?limit=100", w->room);
    char *body = tk_band_get(&w->band, path, w->band.user_key, &http);
    cJSON *root = http == 200 && body ? cJSON_Parse(body) : NULL;
    int has_status = 0, has_reply = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(root, "data")) {
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(m, "metadata");
        const cJSON *mine = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(meta, "delivery_status"), w->agent.id);
        if (strcmp(str_at(m, "id"), mid) == 0 && strcmp(str_at(mine, "status"), status) == 0)
            has_status = 1;
        if (strcmp(str_at(m, "sender_id"), w->agent.id) == 0 && strstr(str_at(m, "content"), reply))
            has_reply = 1;
    }
    cJSON_Delete(root);
    free(body);
    return has_status && has_reply;
}

static int rest_wait(world *w, const char *mid, const char *status, const char *reply)
{
    int64_t deadline = clock_mono_ms() + REPLY_TIMEOUT_MS;
    while (!rest_shows(w, mid, status, reply) && clock_mono_ms() < deadline)
        nap_ms(50);
    return rest_shows(w, mid, status, reply);
}

static int send_text(world *w, const char *content, char mid[BAND_ID_SZ])
{
    char err[ERR_BUFSZ];
    band_mention m = {.id = w->agent.id, .name = w->agent.name};
    return UNIT_CHECK(band_send_message(w->user, w->room, content, &m, 1, mid, err) == ERR_OK,
                      "send: %s", err) ? 0 : -1;
}

/* The probe: "@<name> marker:<token>" answered with sandbox-ack:<token>. */
static int round_trip(world *w, const char *what)
{
    char token[13], content[BAND_NAME_SZ + 64], expect[64], mid[BAND_ID_SZ];
    new_token(token);
    snprintf(content, sizeof content, "@%s marker:%s", w->agent.name, token);
    snprintf(expect, sizeof expect, "sandbox-ack:%s", token);
    if (observer_ready(w) != 0 || send_text(w, content, mid) != 0)
        return -1;
    int64_t t0 = clock_mono_ms();
    int ok = observe(w, mid, "processed", expect);
    if (!UNIT_CHECK(ok, "%s: reply %s and status processed within %d ms", what, expect,
                    REPLY_TIMEOUT_MS)) {
        dump_log(w);
        return -1;
    }
    printf("  measured: %s round trip %lld ms\n", what, (long long)(clock_mono_ms() - t0));
    return 0;
}

static int control(world *w, const char *json)
{
    return UNIT_CHECK(tk_band_control(&w->band, json) == 200, "control %s", json) ? 0 : -1;
}

/* Injects a fault and expects the disconnect line, then the reconnect
 * line; returns the milliseconds from the fault to the reconnect line. */
static long fault_and_reconnect(world *w, const char *fault, const char *disconnect_text)
{
    long from = log_size(w);
    unsigned lost = observer_disconnects(w) + 1;
    int64_t t0 = clock_mono_ms();
    if (control(w, fault) != 0)
        return -1;
    long down = wait_log(w, DISCONNECT_LINE, from, RECONNECT_TIMEOUT_MS);
    long up = down >= 0 ? wait_log(w, RECONNECT_LINE, down, RECONNECT_TIMEOUT_MS) : -1;
    long ms = (long)(clock_mono_ms() - t0);
    UNIT_CHECK(down >= 0, "%s: disconnect line", fault);
    UNIT_CHECK(up > down, "%s: reconnect line after the disconnect line", fault);
    if (down >= 0 && disconnect_text)
        UNIT_CHECK(wait_log(w, disconnect_text, down, 0) == down + (long)strlen(DISCONNECT_LINE),
                   "%s: disconnect reason starts with '%s'", fault, disconnect_text);
    if (up < 0) {
        dump_log(w);
        return -1;
    }
    printf("  measured: %s -> reconnect line %ld ms\n", fault, ms);
    return observer_back(w, lost) == 0 ? ms : -1;
}

/* A ready agent and an observer in its room. */
static int ready_world(world *w, char *const extra_env[])
{
    if (world_up(w, "E2E baseline test agent (sandbox)") != 0 || agent_start(w, extra_env) != 0)
        return -1;
    return observer_start(w);
}

/* ---- cases: the command line --------------------------------------------- */

static void test_sdk_version(void)
{
    char *bin = tk_bin("fake-agent");
    char *argv[] = {bin, "--sdk-version", NULL};
    tk_result r;
    tk_run(argv, NULL, 5000, &r);
    UNIT_CHECK(r.status == 0, "exit 0, got %d", r.status);
    UNIT_CHECK(strcmp(r.output, "band-sdk 0.0.0+standin\n") == 0, "exact output, got '%s'",
               r.output);
    tk_result_free(&r);
    free(bin);
}

static void expect_refusal(char *const env[], const char *message)
{
    char *bin = tk_bin("fake-agent");
    char *argv[] = {bin, NULL};
    tk_result r;
    tk_run(argv, env, 5000, &r);
    UNIT_CHECK(r.status == 1, "exit 1 for '%s', got %d", message, r.status);
    UNIT_CHECK(strstr(r.output, message) != NULL, "says '%s', got '%s'", message, r.output);
    tk_result_free(&r);
    free(bin);
}

static void test_missing_variables(void)
{
    static const char *const names[] = {"BAND_AGENT_ID", "BAND_API_KEY", "BAND_REST_URL",
                                        "BAND_WS_URL"};
    for (size_t miss = 0; miss < 4; miss++) {
        char *env[5] = {"BAND_AGENT_ID=a1", "BAND_API_KEY=key-of-the-test-agent",
                        "BAND_REST_URL=http://127.0.0.1:9",
                        "BAND_WS_URL=ws://127.0.0.1:9/api/v1/socket/websocket", NULL};
        char unset[32], message[96];
        snprintf(unset, sizeof unset, "%s=", names[miss]); /* tk_run: "K=" unsets K */
        env[miss] = unset;
        snprintf(message, sizeof message, "ValueError: %s environment variable is required",
                 names[miss]);
        expect_refusal(env, message);
    }
}

static void test_production_refused(void)
{
    char *env[] = {"BAND_AGENT_ID=a1", "BAND_API_KEY=key-of-the-test-agent",
                   "BAND_REST_URL=https://app.band.ai",
                   "BAND_WS_URL=ws://127.0.0.1:9/api/v1/socket/websocket", NULL};
    expect_refusal(env, "BAND_REST_URL points at production Band");
}

/* ---- cases: startup ------------------------------------------------------- */

static void test_no_description_refuses_to_start(void)
{
    world w;
    if (world_up(&w, "") == 0) {
        agent_spawn(&w, NULL);
        int status = agent_wait(&w, READY_TIMEOUT_MS);
        char expect[128];
        snprintf(expect, sizeof expect, "ValueError: Agent %s has no description", w.agent.id);
        UNIT_CHECK(status == 1, "exit 1, got %d", status);
        UNIT_CHECK(wait_log(&w, expect, 0, 0) >= 0, "log says '%s'", expect);
        UNIT_CHECK(log_count(&w, "Connected to platform") == 0, "never connected");
    }
    world_down(&w);
}

static void test_startup_lines_and_round_trip(void)
{
    world w;
    if (ready_world(&w, NULL) == 0 && round_trip(&w, "first") == 0) {
        char line[BAND_NAME_SZ + 128];
        const char *topics[] = {"agent_control:", "agent_rooms:", "chat_room:",
                                "room_participants:"};
        snprintf(line, sizeof line, "INFO __main__: Sandbox smoke agent starting (agent_id=%s)",
                 w.agent.id);
        UNIT_CHECK(log_count(&w, line) == 1, "starting line");
        UNIT_CHECK(log_count(&w, "INFO band.platform.link: Connected to platform") == 1,
                   "connected line");
        for (size_t i = 0; i < 4; i++) {
            snprintf(line, sizeof line, "INFO phoenix_channels_python_client.client: "
                     "Successfully subscribed to topic %s", topics[i]);
            UNIT_CHECK(log_count(&w, line) == 1, "subscribed to %s once", topics[i]);
        }
        snprintf(line, sizeof line, "INFO band.runtime.presence: Agent joined room: %s", w.room);
        UNIT_CHECK(log_count(&w, line) == 1, "joined-room line");
        snprintf(line, sizeof line, "%s%s (band-sdk 0.0.0+standin)", READY_LINE, w.agent.name);
        UNIT_CHECK(log_count(&w, line) == 1, "readiness line names the agent and the stand-in");
        UNIT_CHECK(log_count(&w, "[HANDLE] Message ") == 1, "one HANDLE line");
        /* Band pushes "processed" before it answers the mark, so the line may lag */
        UNIT_CHECK(wait_log(&w, "processed successfully", 0, EXIT_TIMEOUT_MS) >= 0 &&
                   log_count(&w, "processed successfully") == 1, "one DONE line");
    }
    world_down(&w);
}

/* The log format: "YYYY-MM-DD HH:MM:SS,mmm LEVEL logger: message", UTC. */
static void test_log_format_and_no_secret(void)
{
    world w;
    if (ready_world(&w, NULL) == 0 && round_trip(&w, "format") == 0) {
        char *text = log_text(&w);
        int lines = 0, bad = 0;
        int64_t now = clock_wall_ms(NULL);
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"), lines++) {
            int64_t at = 0;
            char stamp[24];
            snprintf(stamp, sizeof stamp, "%.23s", line);
            if (strlen(line) < 24 || line[23] != ' ' || clock_parse_iso(stamp, &at) != ERR_OK ||
                at > now + 1000 || at < now - 120000 || !strstr(line + 24, ": "))
                bad++;
        }
        free(text);
        text = log_text(&w);
        UNIT_CHECK(lines > 10 && bad == 0, "%d of %d lines off the SDK format", bad, lines);
        UNIT_CHECK(!strstr(text, w.agent.api_key), "the agent key is not in the log");
        UNIT_CHECK(!strstr(text, w.band.user_key), "the user key is not in the log");
        UNIT_CHECK(!strstr(text, "[REDACTED]"), "nothing even tried to log a key");
        free(text);
    }
    world_down(&w);
}

static void test_startup_answers_a_waiting_message(void)
{
    world w;
    char mid[BAND_ID_SZ], content[BAND_NAME_SZ + 64];
    if (world_up(&w, "E2E baseline test agent (sandbox)") == 0) {
        snprintf(content, sizeof content, "@%s marker:early0token", w.agent.name);
        if (observer_start(&w) == 0 && send_text(&w, content, mid) == 0 &&
            agent_start(&w, NULL) == 0)
            UNIT_CHECK(observe(&w, mid, "processed", "sandbox-ack:early0token"),
                       "a message sent before the agent started is answered by the /next "
                       "sync");
    }
    world_down(&w);
}

/* Five 429s: the REST client's own 3 retries use four, then the SDK's
 * metadata loop waits and asks again. */
static void test_rate_limited_identity_still_starts(void)
{
    world w;
    if (world_up(&w, "E2E baseline test agent (sandbox)") == 0 &&
        control(&w, "{\"action\":\"fail_rest\",\"count\":5,\"status\":429,"
                    "\"retry_after\":1}") == 0 &&
        agent_start(&w, NULL) == 0)
        UNIT_CHECK(log_count(&w, "WARNING band.agent: Rate limited fetching metadata") == 1 &&
                   log_count(&w, "retrying in 1.0s (attempt 1/6)") == 1,
                   "the SDK's rate-limit warning, once");
    world_down(&w);
}

/* ---- cases: one message --------------------------------------------------- */

static void test_message_without_marker_fails(void)
{
    world w;
    char mid[BAND_ID_SZ], content[BAND_NAME_SZ + 64];
    if (ready_world(&w, NULL) == 0 && observer_ready(&w) == 0) {
        snprintf(content, sizeof content, "@%s no token here", w.agent.name);
        if (send_text(&w, content, mid) == 0 && UNIT_CHECK(observe(&w, mid, "failed", NULL),
                                                           "marked failed")) {
            const cJSON *entry, *last = NULL;
            cJSON_ArrayForEach(entry, w.seen)
                if (delivery_of(&w, entry, mid))
                    last = delivery_of(&w, entry, mid);
            const cJSON *attempts = cJSON_GetObjectItemCaseSensitive(last, "attempts");
            const cJSON *first = cJSON_GetArrayItem(attempts, 0);
            char expect[BAND_NAME_SZ + 128];
            snprintf(expect, sizeof expect, "no marker found in message content: '%s'", content);
            UNIT_CHECK(cJSON_GetArraySize(attempts) == 1, "one attempt only");
            UNIT_CHECK(strcmp(str_at(first, "error"), expect) == 0, "reason '%s', got '%s'",
                       expect, str_at(first, "error"));
            UNIT_CHECK(!saw_reply(&w, "sandbox-ack:"), "no reply to a message without marker");
            round_trip(&w, "after a failure");
        }
    }
    world_down(&w);
}

/* ---- cases: interruptions -------------------------------------------------- */

static void test_drop_ws_reconnects(void)
{
    world w;
    if (ready_world(&w, NULL) == 0 &&
        fault_and_reconnect(&w, "{\"action\":\"drop_ws\"}", "no close frame") >= 0)
        round_trip(&w, "after drop_ws");
    world_down(&w);
}

static void test_refusal_then_recovers(void)
{
    world w;
    if (ready_world(&w, NULL) == 0 &&
        control(&w, "{\"action\":\"refuse\",\"seconds\":1}") == 0) {
        long ms = fault_and_reconnect(&w, "{\"action\":\"drop_ws\"}", NULL);
        UNIT_CHECK(ms >= 900, "no reconnect while refused (%ld ms)", ms);
        round_trip(&w, "after a 1 s refusal");
    }
    world_down(&w);
}

static void test_close_1011_reconnects(void)
{
    world w;
    if (ready_world(&w, NULL) == 0 &&
        fault_and_reconnect(&w, "{\"action\":\"close\",\"code\":1011,\"reason\":\"test\"}",
                            "received 1011") >= 0)
        round_trip(&w, "after close 1011");
    world_down(&w);
}

/* While the socket is down (1012 waits at least 1 s before reconnecting)
 * a message is only on REST: the resync after the reconnect answers it. */
static void test_missed_message_answered_after_reconnect(void)
{
    world w;
    char mid[BAND_ID_SZ], content[BAND_NAME_SZ + 64];
    if (ready_world(&w, NULL) == 0) {
        long from = log_size(&w);
        snprintf(content, sizeof content, "@%s marker:missed0token", w.agent.name);
        if (control(&w, "{\"action\":\"close\",\"code\":1012,\"reason\":\"restart\"}") == 0 &&
            wait_log(&w, DISCONNECT_LINE, from, RECONNECT_TIMEOUT_MS) >= 0 &&
            send_text(&w, content, mid) == 0) {
            long up = wait_log(&w, RECONNECT_LINE, from, RECONNECT_TIMEOUT_MS);
            long handled = wait_log(&w, mid, from, RECONNECT_TIMEOUT_MS);
            UNIT_CHECK(up >= 0 && handled > up, "handled after the reconnect (%ld > %ld)",
                       handled, up);
            UNIT_CHECK(rest_wait(&w, mid, "processed", "sandbox-ack:missed0token"),
                       "replied and processed after the reconnect");
        }
    }
    world_down(&w);
}

static void test_garbage_frames_keep_it_working(void)
{
    world w;
    if (ready_world(&w, NULL) == 0) {
        long from = log_size(&w);
        if (control(&w, "{\"action\":\"garbage\"}") == 0) {
            UNIT_CHECK(wait_log(&w, "Invalid message_created payload", from, 5000) >= 0,
                       "the non-object message_created is reported");
            round_trip(&w, "after garbage");
            UNIT_CHECK(wait_log(&w, DISCONNECT_LINE, from, 0) < 0, "no disconnect");
        }
    }
    world_down(&w);
}

static void test_room_added_later_and_deleted(void)
{
    world w;
    char err[ERR_BUFSZ], second[BAND_ID_SZ], line[160];
    if (ready_world(&w, NULL) == 0) {
        long from = log_size(&w);
        if (UNIT_CHECK(band_create_chat(w.user, "second", second, err) == ERR_OK &&
                       band_add_participant(w.user, second, w.agent.id, NULL, err) == ERR_OK,
                       "second room: %s", err)) {
            snprintf(line, sizeof line, "Agent joined room: %s", second);
            UNIT_CHECK(wait_log(&w, line, from, 5000) >= 0, "room_added joins the room");
            UNIT_CHECK(band_delete_chat(w.user, second, err) == ERR_OK, "delete: %s", err);
            snprintf(line, sizeof line, "Agent left room: %s", second);
            UNIT_CHECK(wait_log(&w, line, from, 5000) >= 0, "room_deleted leaves the room");
            round_trip(&w, "with rooms coming and going");
        }
    }
    world_down(&w);
}

/* ---- cases: the end -------------------------------------------------------- */

static void test_no_reconnect_knob(void)
{
    world w;
    char *knob[] = {"FAKE_AGENT_NO_RECONNECT=1", NULL};
    if (ready_world(&w, knob) == 0) {
        long from = log_size(&w);
        control(&w, "{\"action\":\"drop_ws\"}");
        UNIT_CHECK(wait_log(&w, DISCONNECT_LINE, from, RECONNECT_TIMEOUT_MS) >= 0,
                   "disconnect logged");
        /* three times the SDK's longest first reconnect delay (500 ms) */
        UNIT_CHECK(wait_log(&w, RECONNECT_LINE, from, 1500) < 0, "no reconnect in 1.5 s");
        UNIT_CHECK(agent_alive(&w), "the process is still alive");
        UNIT_CHECK(tk_band_stat(&w.band, "agent_connections") == 0, "no agent socket at Band");
        kill(w.pid, SIGTERM);
        UNIT_CHECK(agent_wait(&w, EXIT_TIMEOUT_MS) == 0, "SIGTERM still ends it with 0");
    }
    world_down(&w);
}

static void test_sigterm_shuts_down(void)
{
    world w;
    if (ready_world(&w, NULL) == 0) {
        kill(w.pid, SIGTERM);
        int status = agent_wait(&w, EXIT_TIMEOUT_MS);
        UNIT_CHECK(status == 0, "exit 0 after SIGTERM, got %d", status);
        UNIT_CHECK(log_count(&w, "INFO band.agent: " SHUTDOWN_LINE) == 1, "shutdown line");
        int64_t deadline = clock_mono_ms() + EXIT_TIMEOUT_MS;
        while (tk_band_stat(&w.band, "agent_connections") != 0 && clock_mono_ms() < deadline)
            nap_ms(50);
        UNIT_CHECK(tk_band_stat(&w.band, "agent_connections") == 0, "its socket is gone");
    }
    world_down(&w);
}

/* Band keeps one connection per agent: a second stand-in with the same
 * key takes over, and the first is told (supersede, then close 1000). */
static void test_second_agent_supersedes_the_first(void)
{
    world w;
    if (ready_world(&w, NULL) == 0) {
        char *second_log = tk_path(w.dir, "agent2.log");
        pid_t second = spawn_agent(&w, second_log, NULL);
        UNIT_CHECK(wait_file(second_log, READY_LINE, 0, READY_TIMEOUT_MS) >= 0,
                   "the second agent is ready");
        int status = agent_wait(&w, RECONNECT_TIMEOUT_MS);
        UNIT_CHECK(status == 0, "the first one ends with 0, got %d", status);
        UNIT_CHECK(log_count(&w, "WARNING band.platform.link: WebSocket connection superseded: "
                                 "reason=superseded retryable=False") == 1, "superseded line");
        UNIT_CHECK(log_count(&w, "WARNING band.platform.link: WebSocket disconnected after "
                                 "terminal platform reason: superseded") == 1,
                   "terminal disconnect line");
        UNIT_CHECK(log_count(&w, RECONNECT_LINE) == 0, "the first one does not come back");
        round_trip(&w, "after a takeover");
        kill(second, SIGTERM);
        status = wait_pid(second, EXIT_TIMEOUT_MS);
        UNIT_CHECK(status == 0, "the second one ends with 0 on SIGTERM, got %d", status);
        if (status < 0) {
            kill(second, SIGKILL);
            wait_pid(second, EXIT_TIMEOUT_MS);
        }
        free(second_log);
    }
    world_down(&w);
}

static void expect_close_ends(const char *fault, int want_status, const char *line)
{
    world w;
    if (ready_world(&w, NULL) == 0 && control(&w, fault) == 0) {
        int status = agent_wait(&w, RECONNECT_TIMEOUT_MS);
        UNIT_CHECK(status == want_status, "%s: exit %d, got %d", fault, want_status, status);
        int ok = UNIT_CHECK(log_count(&w, line) == 1, "%s: '%s' logged", fault, line);
        ok &= UNIT_CHECK(log_count(&w, RECONNECT_LINE) == 0, "%s: no reconnect", fault);
        if (!ok)
            dump_log(&w);
    }
    world_down(&w);
}

static void test_close_1000_ends_cleanly(void)
{
    expect_close_ends("{\"action\":\"close\",\"code\":1000}", 0,
                      "WARNING band.platform.link: WebSocket disconnected: None");
}

static void test_close_1008_is_terminal(void)
{
    expect_close_ends("{\"action\":\"close\",\"code\":1008,\"reason\":\"policy\"}", 1,
                      "ERROR phoenix_channels_python_client.client: Reconnect disabled due to "
                      "terminal close code 1008 (policy)");
}


/* ---- the SDK's reconnect policy (policy.h), pure ---- */

/* Delays in [lo, hi] ms, scaled. */
static int within(int64_t d, int64_t lo, int64_t hi)
{
    return d >= lo && d <= hi;
}

/* The Wi-Fi-off timeline of band-protocol.md 8.2: a long-lived socket
 * drops, then every attempt fails (uptime 0): 0.25-0.5 s, 1-2 s, 5-10 s,
 * 15-60 s (hold-down). Run many seeds: the bounds must hold for every draw. */
static void check_timeline(double scale)
{
    for (unsigned seed = 1; seed <= 200; seed++) {
        policy p;
        policy_init(&p, seed);
        int64_t now = 1000000;
        const int64_t lo[] = {250, 1000, 5000, 15000}, hi[] = {500, 2000, 10000, 60000};
        int64_t d = policy_delay(&p, now, 1, 0, (int64_t)(120000 * scale), 0);
        int ok = within(d, (int64_t)(lo[0] * scale), (int64_t)(hi[0] * scale) + 1);
        for (int i = 1; ok && i < 4; i++) {
            now += d;
            d = policy_delay(&p, now, 1, 0, 0, 0);
            ok = within(d, (int64_t)(lo[i] * scale), (int64_t)(hi[i] * scale) + 1);
            if (!ok)
                UNIT_CHECK(0, "scale %.2f seed %u step %d: %lld ms not in [%lld, %lld]", scale,
                           seed, i, (long long)d, (long long)(lo[i] * scale),
                           (long long)(hi[i] * scale));
        }
        if (!ok)
            return;
    }
}

static void test_reconnect_policy_is_the_sdks(void)
{
    unsetenv("SMOKE_TIME_SCALE");
    check_timeline(1.0);
    setenv("SMOKE_TIME_SCALE", "0.1", 1);
    check_timeline(0.1);
    unsetenv("SMOKE_TIME_SCALE");
    /* Initial connect: plain equal jitter, no rapid minimums. */
    policy p;
    policy_init(&p, 7);
    CU_ASSERT_TRUE(within(policy_delay(&p, 0, 0, 0, 0, 0), 250, 500));
    CU_ASSERT_TRUE(within(policy_delay(&p, 0, 0, 0, 0, 0), 500, 1000));
    CU_ASSERT_TRUE(within(policy_delay(&p, 0, 0, 0, 0, 0), 1000, 2000));
    /* A restart close (1012) waits at least U(1,5) s even after a long life. */
    policy_init(&p, 9);
    CU_ASSERT_TRUE(within(policy_delay(&p, 0, 1, 1012, 600000, 0), 1000, 5000));
    /* After a stable minute the rapid history is forgotten: 0.25-0.5 s again. */
    policy_init(&p, 11);
    int64_t now = 0;
    for (int i = 0; i < 3; i++)
        now += policy_delay(&p, now, 1, 0, 0, 0);
    CU_ASSERT_TRUE(within(policy_delay(&p, now, 1, 0, 60000, 0), 250, 500));
}

const unit_case unit_cases[] = {
    {"reconnect_policy_is_the_sdks", test_reconnect_policy_is_the_sdks},
    {"sdk_version", test_sdk_version},
    {"missing_variables", test_missing_variables},
    {"production_refused", test_production_refused},
    {"no_description_refuses_to_start", test_no_description_refuses_to_start},
    {"startup_lines_and_round_trip", test_startup_lines_and_round_trip},
    {"log_format_and_no_secret", test_log_format_and_no_secret},
    {"startup_answers_a_waiting_message", test_startup_answers_a_waiting_message},
    {"rate_limited_identity_still_starts", test_rate_limited_identity_still_starts},
    {"message_without_marker_fails", test_message_without_marker_fails},
    {"drop_ws_reconnects", test_drop_ws_reconnects},
    {"refusal_then_recovers", test_refusal_then_recovers},
    {"close_1011_reconnects", test_close_1011_reconnects},
    {"missed_message_answered_after_reconnect", test_missed_message_answered_after_reconnect},
    {"garbage_frames_keep_it_working", test_garbage_frames_keep_it_working},
    {"room_added_later_and_deleted", test_room_added_later_and_deleted},
    {"no_reconnect_knob", test_no_reconnect_knob},
    {"sigterm_shuts_down", test_sigterm_shuts_down},
    {"second_agent_supersedes_the_first", test_second_agent_supersedes_the_first},
    {"close_1000_ends_cleanly", test_close_1000_ends_cleanly},
    {"close_1008_is_terminal", test_close_1008_is_terminal},
    {NULL, NULL},
};
