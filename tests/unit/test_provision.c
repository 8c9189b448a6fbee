/* provision: the Band side of a run against the fake Band server.
 *
 * Provisioning end to end (ids saved through the callback the moment each
 * resource exists, the 0600 key file, no key in the state), a failure at
 * each step leaving nothing alive, reaps that fail, reaps of resources
 * already gone, the orphan sweep's rules, the production guard before any
 * request, and the user key never in any message.
 *
 * The fake cannot aim a fault at a path: fail_rest fails the next N REST
 * calls. Faults are aimed at a step by planning them at the right moment,
 * from the save callback that runs right before the step, or by counting
 * the calls before it (one sweep listing when there is nothing to sweep).
 */
#include "clock.h"
#include "config.h"
#include "provision.h"
#include "redact.h"
#include "state.h"
#include "tk.h"
#include "tk_band.h"
#include "unit.h"

#include <cJSON.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CANARY "canary-user-key-3e9d7a1f5c2b"
#define FAIL_ONE_500 "{\"action\":\"fail_rest\",\"count\":1,\"status\":500}"
#define FAIL_TWO_500 "{\"action\":\"fail_rest\",\"count\":2,\"status\":500}"
#define STALL "{\"action\":\"delay\",\"ms\":2000}"
#define MAX_SAVES 8

typedef struct world {
    tk_band band;
    int up;
    char *dir; /* state folder, also the key folder (0700) */
    state_store store;
    state_t *st;
    config cfg;
    int saves;
    int fault_at_save; /* plan FAIL_ONE_500 during this save (1-based); 0 = never */
    int stall_at_save; /* plan STALL during this save (1-based); 0 = never */
    int die_when_room; /* SIGKILL itself when asked to save a room id */
    char saved_agent[MAX_SAVES][STATE_ID_SZ];
    char saved_room[MAX_SAVES][STATE_ID_SZ];
} world;

static err_code save_cb(void *ud, char *err)
{
    world *w = ud;
    if (w->die_when_room && w->st->room_id[0])
        raise(SIGKILL); /* as a kill would: the id never reaches the disk */
    if (w->saves < MAX_SAVES) {
        memcpy(w->saved_agent[w->saves], w->st->agent_id, STATE_ID_SZ);
        memcpy(w->saved_room[w->saves], w->st->room_id, STATE_ID_SZ);
    }
    w->saves++;
    if (w->saves == w->fault_at_save)
        UNIT_CHECK(tk_band_control(&w->band, FAIL_ONE_500) == 200, "fault planned");
    if (w->saves == w->stall_at_save)
        UNIT_CHECK(tk_band_control(&w->band, STALL) == 200, "stall planned");
    return state_save(&w->store, w->st, err);
}

static int world_open(world *w)
{
    memset(w, 0, sizeof *w);
    redact_clear(); /* every provisioning registers a minted key; the registry holds 32 */
    redact_add_secret(CANARY);
    w->dir = tk_tmpdir("provision");
    char err[ERR_BUFSZ];
    if (state_store_init(&w->store, w->dir, NULL, err) != ERR_OK ||
        !(w->st = state_new(&w->store)) || state_save(&w->store, w->st, err) != ERR_OK)
        abort();
    if (!UNIT_CHECK(tk_band_start(&w->band, CANARY) == 0, "fake Band started"))
        return 0;
    w->up = 1;
    tk_band_config(&w->band, 10, &w->cfg); /* the fake holds CANARY as its user key */
    return 1;
}

static void world_close(world *w)
{
    if (w->up)
        tk_band_stop(&w->band);
    state_free(w->st);
    tk_rmtree(w->dir);
    free(w->dir);
}

/* A message must hold neither the user key nor any key minted so far. */
static int clean(const char *what, const char *text)
{
    return UNIT_CHECK(!strstr(text, CANARY) && !redact_has_secret(text, strlen(text)),
                      "a key in %s: %s", what, text);
}

static void live(world *w, int agents, int rooms, const char *when)
{
    int a = -1, r = -1;
    tk_band_stats(&w->band, &a, &r);
    UNIT_CHECK(a == agents && r == rooms, "%s: %d agents and %d rooms live, want %d and %d",
               when, a, r, agents, rooms);
}

static char *key_path(world *w)
{
    return tk_path(w->dir, PROVISION_KEY_FILE);
}

static int key_file_exists(world *w)
{
    char *path = key_path(w);
    struct stat sb;
    int exists = lstat(path, &sb) == 0;
    free(path);
    return exists;
}

/* The state on disk, as a later band-smoke would read it. */
static state_t *on_disk(world *w)
{
    state_t *st = NULL;
    char err[ERR_BUFSZ];
    UNIT_CHECK(state_load(&w->store, &st, err) == ERR_OK, "state on disk: %s", err);
    return st;
}

static err_code provision(world *w, provision_out *out, char *err)
{
    err[0] = '\0';
    err_code rc = provision_run(&w->cfg, w->st, save_cb, w, w->dir, out, err);
    clean("the error", err);
    clean("the notes", out->notes);
    return rc;
}

static err_code reap(world *w, char *err)
{
    err[0] = '\0';
    err_code rc = provision_reap(&w->cfg, w->st, save_cb, w, err);
    clean("the error", err);
    return rc;
}

static long rest_calls(world *w)
{
    return tk_band_stat(&w->band, "rest_calls");
}

/* GET with the user key; the parsed body's "data" array, or NULL. */
static cJSON *get_list(world *w, const char *path)
{
    long status = 0;
    char *body = tk_band_get(&w->band, path, CANARY, &status);
    cJSON *root = status == 200 && body ? cJSON_Parse(body) : NULL;
    free(body);
    return root;
}

static int agent_listed(world *w, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/me/agents?limit=100&name=%s", name);
    cJSON *root = get_list(w, path);
    int found = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(root, "data")) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(item, "name");
        found += cJSON_IsString(n) && strcmp(n->valuestring, name) == 0;
    }
    cJSON_Delete(root);
    return found;
}

static void seed(world *w, const char *name, int age_minutes)
{
    char json[256];
    snprintf(json, sizeof json, "{\"action\":\"seed_agent\",\"name\":\"%s\",\"age_minutes\":%d}",
             name, age_minutes);
    UNIT_CHECK(tk_band_control(&w->band, json) == 200, "seed %s", name);
}

/* ---- end to end ---------------------------------------------------------- */

static void check_key_file(world *w, const provision_out *out)
{
    char *path = key_path(w);
    struct stat sb;
    UNIT_CHECK(strcmp(out->key_file, path) == 0, "key file %s, want %s", out->key_file, path);
    UNIT_CHECK(lstat(path, &sb) == 0 && S_ISREG(sb.st_mode) && (sb.st_mode & 0777) == 0600,
               "key file is a 0600 regular file (mode %o)", (unsigned)(sb.st_mode & 0777));
    char *text = tk_read(path, NULL);
    const char *key = text ? text + strlen("BAND_API_KEY=") : "";
    size_t n = text ? strlen(text) : 0;
    UNIT_CHECK(text && strncmp(text, "BAND_API_KEY=", 13) == 0 && n > 14 && text[n - 1] == '\n' &&
                   strchr(text, '\n') == text + n - 1,
               "one line BAND_API_KEY=<key>");
    if (text && n > 14) {
        text[n - 1] = '\0';
        UNIT_CHECK(redact_has_secret(key, strlen(key)), "the minted key is registered with redact");
        long status = 0;
        char *me = tk_band_get(&w->band, "/api/v1/agent/me", key, &status);
        UNIT_CHECK(status == 200 && me && strstr(me, w->st->agent_id) &&
                       strstr(me, "E2E baseline test agent (sandbox)"),
                   "the file's key is the agent's (HTTP %ld)", status);
        free(me);
        char *json = state_to_json(w->st);
        UNIT_CHECK(json && !strstr(json, key), "the key is not in the state");
        free(json);
        char *disk = tk_read(w->store.path, NULL);
        UNIT_CHECK(disk && !strstr(disk, key) && !strstr(disk, CANARY), "no key in state.json");
        free(disk);
    }
    free(text);
    free(path);
}

static void check_room(world *w)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/me/chats/%s/participants", w->st->room_id);
    cJSON *root = get_list(w, path);
    int member = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(root, "data")) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(p, "id");
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(p, "role");
        member += cJSON_IsString(id) && strcmp(id->valuestring, w->st->agent_id) == 0 &&
                  cJSON_IsString(role) && strcmp(role->valuestring, "member") == 0;
    }
    UNIT_CHECK(member == 1, "the agent is a member of the room");
    cJSON_Delete(root);
}

static void test_provision_end_to_end(void)
{
    world w;
    if (!world_open(&w))
        goto out;
    seed(&w, "e2e-band-0ld0ld00-sandbox", 500); /* an orphan of an old run */
    provision_out out;
    char err[ERR_BUFSZ], name[64];
    int64_t t0 = clock_mono_ms();
    err_code rc = provision(&w, &out, err);
    int64_t took = clock_mono_ms() - t0;
    if (!UNIT_CHECK(rc == ERR_OK, "provision: %s %s", err_str(rc), err))
        goto out;
    printf("\n    provisioning took %lld ms\n", (long long)took);
    snprintf(name, sizeof name, "e2e-band-%s-sandbox", w.st->run_id);
    UNIT_CHECK(strcmp(w.st->agent_name, name) == 0, "agent name %s", w.st->agent_name);
    UNIT_CHECK(w.st->agent_id[0] && w.st->room_id[0], "ids in the state");
    UNIT_CHECK(out.swept == 1 && out.reaped == 0 && out.notes[0] == '\0',
               "swept %d reaped %d notes '%s'", out.swept, out.reaped, out.notes);
    UNIT_CHECK(w.saves == 4, "saved four times, got %d", w.saves);
    UNIT_CHECK(w.saved_agent[0][0] == '\0' && w.saved_room[0][0] == '\0',
               "first save: the agent's name alone, before asking Band to register it");
    UNIT_CHECK(strcmp(w.saved_agent[1], w.st->agent_id) == 0 && w.saved_room[1][0] == '\0',
               "second save: the agent, right after registering");
    UNIT_CHECK(strcmp(w.saved_agent[2], w.st->agent_id) == 0 && w.saved_room[2][0] == '\0',
               "third save: the room's title alone, before asking Band to create it");
    UNIT_CHECK(strcmp(w.saved_agent[3], w.st->agent_id) == 0 &&
                   strcmp(w.saved_room[3], w.st->room_id) == 0,
               "fourth save: the room, right after creating it");
    char title[96];
    snprintf(title, sizeof title, "Sandbox smoke \xE2\x80\x94 %s #", w.st->run_id);
    UNIT_CHECK(strncmp(w.st->room_title, title, strlen(title)) == 0 &&
                   strlen(w.st->room_title) == strlen(title) + 8,
               "room title: the SDK's and an 8-hex nonce: %s", w.st->room_title);
    state_t *disk = on_disk(&w);
    UNIT_CHECK(disk && strcmp(disk->agent_id, w.st->agent_id) == 0 &&
                   strcmp(disk->room_id, w.st->room_id) == 0 &&
                   strcmp(disk->agent_name, name) == 0,
               "ids on disk");
    state_free(disk);
    live(&w, 1, 1, "after provisioning");
    check_key_file(&w, &out);
    check_room(&w);

    rc = reap(&w, err);
    UNIT_CHECK(rc == ERR_OK, "reap: %s", err);
    UNIT_CHECK(!w.st->agent_id[0] && !w.st->room_id[0] && !w.st->agent_name[0] &&
                   !w.st->room_title[0],
               "ids, name and title cleared");
    UNIT_CHECK(w.saves == 6, "each clear saved: %d saves", w.saves);
    live(&w, 0, 0, "after reaping");
out:
    world_close(&w);
}

/* ---- a failure at each step leaves nothing alive -------------------------- */

static void failed_cleanly(world *w, err_code rc, const char *err, int saves, const char *step)
{
    UNIT_CHECK(rc == ERR_HTTP && strstr(err, "HTTP 500"), "%s fails with the 500: %s %s", step,
               err_str(rc), err);
    UNIT_CHECK(!provision_holds(w->st), "%s: no ids, name or title left in the state", step);
    UNIT_CHECK(w->saves == saves, "%s: %d saves, want %d", step, w->saves, saves);
    UNIT_CHECK(!key_file_exists(w), "%s: no key file", step);
    live(w, 0, 0, step);
    state_t *disk = on_disk(w);
    UNIT_CHECK(!disk || !provision_holds(disk), "%s: nothing recorded on disk", step);
    state_free(disk);
}

static void test_fail_at_register(void)
{
    world w;
    if (!world_open(&w))
        goto out;
    /* nothing to sweep: one listing, then the register */
    UNIT_CHECK(tk_band_control(&w.band, FAIL_TWO_500) == 200, "plan");
    provision_out out;
    char err[ERR_BUFSZ];
    err_code rc = provision(&w, &out, err);
    /* the name saved before asking, then cleared when no agent bears it */
    failed_cleanly(&w, rc, err, 2, "register");
    UNIT_CHECK(strstr(err, "/api/v1/me/agents/register") != NULL, "names the call: %s", err);
    UNIT_CHECK(strstr(out.notes, "orphan sweep") && strstr(out.notes, "HTTP 500"),
               "the failed sweep listing is noted, not fatal: %s", out.notes);
out:
    world_close(&w);
}

static void test_fail_at_create_chat(void)
{
    world w;
    if (!world_open(&w))
        goto out;
    w.fault_at_save = 3; /* the title's save: the next call creates the room */
    provision_out out;
    char err[ERR_BUFSZ];
    err_code rc = provision(&w, &out, err);
    /* name, agent, title; then the title cleared (Band answered: no room
     * bears it) and the agent reaped */
    failed_cleanly(&w, rc, err, 5, "create chat");
    UNIT_CHECK(strstr(err, "/api/v1/me/chats") && strstr(err, "reaped what it had made"),
               "message: %s", err);
out:
    world_close(&w);
}

static void test_fail_at_add_participant(void)
{
    world w;
    if (!world_open(&w))
        goto out;
    w.fault_at_save = 4; /* the save after creating the room: next, the participant */
    provision_out out;
    char err[ERR_BUFSZ];
    err_code rc = provision(&w, &out, err);
    failed_cleanly(&w, rc, err, 6, "add participant");
    UNIT_CHECK(strstr(err, "/participants") && strstr(err, "reaped what it had made"),
               "message: %s", err);
out:
    world_close(&w);
}

/* ---- reaping ------------------------------------------------------------- */

static void test_failed_reap_keeps_id_and_is_retried_first(void)
{
    world w;
    if (!world_open(&w))
        goto out;
    provision_out out;
    char err[ERR_BUFSZ];
    if (!UNIT_CHECK(provision(&w, &out, err) == ERR_OK, "provision: %s", err))
        goto out;
    char old_room[STATE_ID_SZ];
    memcpy(old_room, w.st->room_id, sizeof old_room);

    /* the room delete (first call) fails; the agent is still reaped */
    UNIT_CHECK(tk_band_control(&w.band, FAIL_ONE_500) == 200, "plan");
    err_code rc = reap(&w, err);
    UNIT_CHECK(rc == ERR_HTTP && strstr(err, "reaping room") && strstr(err, "kept in the state"),
               "reap: %s %s", err_str(rc), err);
    UNIT_CHECK(strcmp(w.st->room_id, old_room) == 0 && !w.st->agent_id[0],
               "room id kept, agent id cleared");
    live(&w, 0, 1, "after a half reap");
    state_t *disk = on_disk(&w);
    UNIT_CHECK(disk && strcmp(disk->room_id, old_room) == 0 && !disk->agent_id[0],
               "the kept room id is on disk");
    state_free(disk);

    /* still failing: the sweep listing and the room delete; nothing new made */
    UNIT_CHECK(tk_band_control(&w.band, FAIL_TWO_500) == 200, "plan");
    long before = rest_calls(&w);
    int saves = w.saves;
    rc = provision(&w, &out, err);
    UNIT_CHECK(rc == ERR_WRONG_STATE && strstr(err, "nothing provisioned"),
               "refuses: %s %s", err_str(rc), err);
    UNIT_CHECK(rest_calls(&w) - before == 2, "only the listing and the delete were tried (%ld)",
               rest_calls(&w) - before);
    UNIT_CHECK(w.saves == saves && strcmp(w.st->room_id, old_room) == 0 && !w.st->agent_id[0],
               "the state is unchanged");
    live(&w, 0, 1, "after the refusal");

    /* working again: the kept room goes first, then a fresh pair */
    rc = provision(&w, &out, err);
    UNIT_CHECK(rc == ERR_OK && out.reaped == 1, "provision after: %s reaped %d", err, out.reaped);
    UNIT_CHECK(w.st->room_id[0] && strcmp(w.st->room_id, old_room) != 0, "a new room");
    live(&w, 1, 1, "after reprovisioning");
    UNIT_CHECK(reap(&w, err) == ERR_OK, "final reap: %s", err);
    live(&w, 0, 0, "at the end");
out:
    world_close(&w);
}

static void test_reap_of_resources_already_gone(void)
{
    world w;
    if (!world_open(&w))
        goto out;
    provision_out out;
    char err[ERR_BUFSZ], path[256];
    if (!UNIT_CHECK(provision(&w, &out, err) == ERR_OK, "provision: %s", err))
        goto out;
    long status = 0;
    snprintf(path, sizeof path, "/api/v1/me/chats/%s", w.st->room_id);
    free(tk_band_request(&w.band, "DELETE", path, CANARY, NULL, &status));
    UNIT_CHECK(status == 200, "room deleted behind its back: %ld", status);
    snprintf(path, sizeof path, "/api/v1/me/agents/%s?force=true", w.st->agent_id);
    free(tk_band_request(&w.band, "DELETE", path, CANARY, NULL, &status));
    UNIT_CHECK(status == 200, "agent deleted behind its back: %ld", status);
    int saves = w.saves;
    err_code rc = reap(&w, err);
    UNIT_CHECK(rc == ERR_OK, "404 counts as reaped: %s %s", err_str(rc), err);
    UNIT_CHECK(!w.st->room_id[0] && !w.st->agent_id[0] && w.saves == saves + 2,
               "both ids cleared and saved");
    UNIT_CHECK(reap(&w, err) == ERR_OK && w.saves == saves + 2, "nothing recorded: no call");
out:
    world_close(&w);
}

/* ---- the orphan sweep ---------------------------------------------------- */

static void test_sweep_rules(void)
{
    world w;
    if (!world_open(&w))
        goto out;
    char own[64], name[64];
    snprintf(own, sizeof own, "e2e-band-%s-sandbox", w.st->run_id);
    seed(&w, own, 600);                          /* this run's own: spared however old */
    seed(&w, "e2e-band-young000-sandbox", 30);   /* too young */
    seed(&w, "e2e-band-edge0000-sandbox", 110);  /* younger than 120 min */
    seed(&w, "someone-else-agent", 600);         /* not ours by name */
    seed(&w, "my-e2e-band-x-sandbox", 600);      /* holds the prefix, does not start with it */
    seed(&w, "E2E-BAND-upper00-sandbox", 600);   /* case matters for the prefix */
    enum { OLD = 103 };                          /* more than one page of 100 */
    for (int i = 0; i < OLD; i++) {
        snprintf(name, sizeof name, "e2e-band-o%07d-sandbox", i);
        seed(&w, name, 130 + i);
    }
    int deleted = -1;
    char err[ERR_BUFSZ] = "x";
    err_code rc = provision_sweep(&w.cfg, w.st->run_id, clock_wall_ms(NULL),
                                  PROVISION_ORPHAN_MAX_AGE_MIN, &deleted, err);
    clean("the error", err);
    UNIT_CHECK(rc == ERR_OK && err[0] == '\0', "sweep: %s '%s'", err_str(rc), err);
    UNIT_CHECK(deleted == OLD, "deleted %d, want %d", deleted, OLD);
    live(&w, 6, 0, "after the sweep");
    const char *spared[] = {own, "e2e-band-young000-sandbox", "e2e-band-edge0000-sandbox",
                            "someone-else-agent", "my-e2e-band-x-sandbox",
                            "E2E-BAND-upper00-sandbox"};
    for (size_t i = 0; i < sizeof spared / sizeof spared[0]; i++)
        UNIT_CHECK(agent_listed(&w, spared[i]) == 1, "%s spared", spared[i]);
    UNIT_CHECK(agent_listed(&w, "e2e-band-o0000000-sandbox") == 0 &&
                   agent_listed(&w, "e2e-band-o0000102-sandbox") == 0,
               "the first and the last orphan are gone");

    long before = rest_calls(&w);
    rc = provision_sweep(&w.cfg, w.st->run_id, clock_wall_ms(NULL), 0, &deleted, err);
    UNIT_CHECK(rc == ERR_OK && deleted == 2, "age 0 takes the young ones too: %d %s", deleted,
               err);
    UNIT_CHECK(rest_calls(&w) - before == 3, "one listing, two deletes (%ld)",
               rest_calls(&w) - before);
    UNIT_CHECK(agent_listed(&w, own) == 1, "own run still spared");

    UNIT_CHECK(tk_band_control(&w.band, FAIL_ONE_500) == 200, "plan");
    rc = provision_sweep(&w.cfg, w.st->run_id, clock_wall_ms(NULL), 0, &deleted, err);
    UNIT_CHECK(rc == ERR_HTTP && deleted == 0 && strstr(err, "orphan sweep, page 1"),
               "a failed listing: %s %s", err_str(rc), err);
    UNIT_CHECK(provision_sweep(&w.cfg, "", 0, 120, &deleted, err) == ERR_USAGE,
               "a run id is required: without it every old agent would look orphaned");
out:
    world_close(&w);
}

/* ---- the production guard ------------------------------------------------ */

static void test_production_refused_before_any_request(void)
{
    world w;
    if (!world_open(&w))
        goto out;
    snprintf(w.st->room_id, sizeof w.st->room_id, "room-kept-0001");
    snprintf(w.st->agent_id, sizeof w.st->agent_id, "agent-kept-0001");
    const char *rest[] = {"https://app.band.ai", "HTTPS://App.Band.AI:443/", w.band.rest_url};
    const char *ws[] = {w.band.ws_url, w.band.ws_url, "wss://app.band.ai/api/v1/socket/websocket"};
    for (int i = 0; i < 3; i++) {
        config cfg = w.cfg;
        snprintf(cfg.rest_url, sizeof cfg.rest_url, "%s", rest[i]);
        snprintf(cfg.ws_url, sizeof cfg.ws_url, "%s", ws[i]);
        provision_out out;
        char err[ERR_BUFSZ] = "";
        int deleted = -1;
        err_code rc = provision_run(&cfg, w.st, save_cb, &w, w.dir, &out, err);
        UNIT_CHECK(rc == ERR_PRODUCTION, "provision_run %d: %s %s", i, err_str(rc), err);
        clean("the error", err);
        rc = provision_reap(&cfg, w.st, save_cb, &w, err);
        UNIT_CHECK(rc == ERR_PRODUCTION, "provision_reap %d: %s", i, err_str(rc));
        rc = provision_sweep(&cfg, w.st->run_id, clock_wall_ms(NULL), 120, &deleted, err);
        UNIT_CHECK(rc == ERR_PRODUCTION && deleted == 0, "provision_sweep %d: %s", i,
                   err_str(rc));
    }
    config unset = w.cfg;
    unset.api_key_user[0] = '\0';
    provision_out out;
    char err[ERR_BUFSZ] = "";
    UNIT_CHECK(provision_run(&unset, w.st, save_cb, &w, w.dir, &out, err) == ERR_CONFIG &&
                   strstr(err, "BAND_API_KEY_USER"),
               "no user key: %s", err);
    UNIT_CHECK(rest_calls(&w) == 0, "no request reached Band (%ld)", rest_calls(&w));
    UNIT_CHECK(w.saves == 0 && strcmp(w.st->room_id, "room-kept-0001") == 0 &&
                   strcmp(w.st->agent_id, "agent-kept-0001") == 0,
               "the state untouched");
out:
    world_close(&w);
}

static void test_bad_arguments(void)
{
    world w;
    if (!world_open(&w))
        goto out;
    provision_out out;
    char err[ERR_BUFSZ];
    UNIT_CHECK(provision_run(&w.cfg, w.st, NULL, &w, w.dir, &out, err) == ERR_USAGE,
               "no save callback");
    UNIT_CHECK(provision_run(&w.cfg, w.st, save_cb, &w, NULL, &out, err) == ERR_USAGE,
               "no key folder");
    UNIT_CHECK(provision_reap(&w.cfg, NULL, save_cb, &w, err) == ERR_USAGE, "no state");
    char *open_dir = tk_path(w.dir, "open");
    mkdir(open_dir, 0755);
    chmod(open_dir, 0755);
    err_code rc = provision_run(&w.cfg, w.st, save_cb, &w, open_dir, &out, err);
    UNIT_CHECK(rc == ERR_CONFIG && !w.st->agent_id[0] && !w.st->room_id[0],
               "a key folder open to others: %s %s", err_str(rc), err);
    live(&w, 0, 0, "after refusing the key folder");
    free(open_dir);
    UNIT_CHECK(rest_calls(&w) == 6, "listing, three steps, then two reaps: %ld calls",
               rest_calls(&w));
out:
    world_close(&w);
}

/* Killed between asking Band to register and saving the answer: the state
 * has the agent's name and no id. The next provisioning finds the agent by
 * that exact name and reaps it; look-alike names are never touched. */
static void test_agent_lost_mid_register_is_reaped_by_name(void)
{
    world w;
    if (!world_open(&w))
        goto out;
    char name[64], lookalike[72];
    snprintf(name, sizeof name, "e2e-band-%s-sandbox", w.st->run_id);
    snprintf(lookalike, sizeof lookalike, "%s-other", name);
    seed(&w, name, 0);
    seed(&w, lookalike, 0);
    snprintf(w.st->agent_name, sizeof w.st->agent_name, "%s", name);
    live(&w, 2, 0, "before");
    char err[ERR_BUFSZ];
    UNIT_CHECK(reap(&w, err) == ERR_OK, "reap by name: %s", err);
    UNIT_CHECK(!w.st->agent_name[0], "the name is forgotten once its agent is gone");
    live(&w, 1, 0, "after reaping by name (the look-alike stays)");

    seed(&w, name, 0);
    snprintf(w.st->agent_name, sizeof w.st->agent_name, "%s", name);
    provision_out out;
    err_code rc = provision(&w, &out, err);
    UNIT_CHECK(rc == ERR_OK && out.reaped == 1, "provision after a lost id: %s reaped %d", err,
               out.reaped);
    live(&w, 2, 1, "the new agent and the look-alike");
    reap(&w, err);
out:
    world_close(&w);
}


/* ---- the room window: a create whose answer never reached the disk ------- */

#define TITLE_PREFIX "Sandbox smoke \xE2\x80\x94 "

static void make_room(world *w, const char *title)
{
    char json[256];
    long status = 0;
    snprintf(json, sizeof json, "{\"chat\":{\"title\":\"%s\"}}", title);
    free(tk_band_request(&w->band, "POST", "/api/v1/me/chats", CANARY, json, &status));
    UNIT_CHECK(status == 201, "room %s made: HTTP %ld", title, status);
}

/* The title alone is recorded (the run died, or the answer was lost, after
 * Band made the room). Reaping lists every page of the user's rooms and
 * deletes exactly the one bearing that title; a room of the same run with
 * another nonce, and everyone else's rooms, stay. */
static void test_room_lost_is_reaped_by_title(void)
{
    world w;
    if (!world_open(&w))
        goto out;
    char title[96], sibling[96], other[64];
    snprintf(title, sizeof title, TITLE_PREFIX "%s #0badc0de", w.st->run_id);
    snprintf(sibling, sizeof sibling, TITLE_PREFIX "%s #00000000", w.st->run_id);
    make_room(&w, sibling);
    for (int i = 0; i < 120; i++) { /* more than one page of 100 before it */
        snprintf(other, sizeof other, "someone else's room %d", i);
        make_room(&w, other);
    }
    make_room(&w, title);
    live(&w, 0, 122, "before");
    snprintf(w.st->room_title, sizeof w.st->room_title, "%s", title);
    char err[ERR_BUFSZ];
    long before = rest_calls(&w);
    UNIT_CHECK(reap(&w, err) == ERR_OK, "reap by title: %s", err);
    UNIT_CHECK(rest_calls(&w) - before == 3, "two pages listed, one delete: %ld calls",
               rest_calls(&w) - before);
    UNIT_CHECK(!w.st->room_title[0], "the title is forgotten once its room is gone");
    live(&w, 0, 121, "after (the sibling and the others stay)");
    state_t *disk = on_disk(&w);
    UNIT_CHECK(disk && !disk->room_title[0], "the cleared title is on disk");
    state_free(disk);

    /* a title of another form is never reaped by: forgotten, nothing deleted */
    snprintf(w.st->room_title, sizeof w.st->room_title, "someone else's room 7");
    UNIT_CHECK(reap(&w, err) == ERR_OK && !w.st->room_title[0], "foreign title: %s", err);
    live(&w, 0, 121, "after a foreign title");
out:
    world_close(&w);
}

/* A stalled server makes the room and never answers in time: the create
 * times out, so does the listing that looks for the room, and provisioning
 * says so (never "reaped what it had made") and keeps the title. Once Band
 * answers again, the next reap finds the room by it. Time runs at 1/20:
 * the 30 s call deadline is 1.5 s, raised to its 5 s floor; the stall 8 s. */
static void test_room_create_stalled_then_reaped(void)
{
    world w;
    if (!world_open(&w))
        goto out;
    /* A Band call's bound of 1 s and a stall of 2 s: the create, the undo's
     * room search and its agent delete each run out (what a 30 s bound
     * and a longer stall do, in 3 s). */
    w.cfg.band_timeout_s = 1;
    w.stall_at_save = 3; /* the title's save: the next call creates the room */
    provision_out out;
    char err[ERR_BUFSZ];
    err_code rc = provision(&w, &out, err);
    UNIT_CHECK(rc == ERR_TIMEOUT, "the create times out: %s %s", err_str(rc), err);
    UNIT_CHECK(!strstr(err, "reaped what it had made") && strstr(err, "kept in the state"),
               "the message says what is left: %s", err);
    UNIT_CHECK(w.st->room_title[0] && !w.st->room_id[0], "the title is kept, no id");
    live(&w, 0, 1, "the room Band made while stalling (the agent's delete landed)");
    state_t *disk = on_disk(&w);
    UNIT_CHECK(disk && strcmp(disk->room_title, w.st->room_title) == 0, "the title is on disk");
    state_free(disk);

    UNIT_CHECK(tk_band_control(&w.band, "{\"action\":\"delay\",\"ms\":0}") == 200, "unstall");
    UNIT_CHECK(reap(&w, err) == ERR_OK, "the next reap: %s", err);
    UNIT_CHECK(!provision_holds(w.st), "nothing left recorded");
    live(&w, 0, 0, "after the next reap");
out:
    world_close(&w);
}

/* SIGKILL in the instant between Band's answer to the room create and the
 * save of its id: a child provisions and kills itself there. The state on
 * disk holds the agent and the room's title; the next step reaps both. */
static void test_killed_before_room_id_saved(void)
{
    world w;
    if (!world_open(&w))
        goto out;
    w.die_when_room = 1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        provision_out out;
        char err[ERR_BUFSZ];
        provision_run(&w.cfg, w.st, save_cb, &w, w.dir, &out, err);
        _exit(3); /* never reached when the kill came */
    }
    int status = 0;
    UNIT_CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) &&
                   WTERMSIG(status) == SIGKILL,
               "the child was killed there (status %d)", status);
    live(&w, 1, 1, "what the killed run made");
    state_t *disk = on_disk(&w);
    if (!disk)
        goto out;
    UNIT_CHECK(disk->agent_id[0] && !disk->room_id[0] && disk->room_title[0],
               "on disk: the agent's id and the room's title, no room id");
    state_free(w.st);
    w.st = disk;
    char err[ERR_BUFSZ];
    UNIT_CHECK(reap(&w, err) == ERR_OK, "the next step's reap: %s", err);
    UNIT_CHECK(!provision_holds(w.st), "nothing left recorded");
    live(&w, 0, 0, "after the next step");
out:
    world_close(&w);
}

/* A run that ended with a title and no id (the create's answer lost, the
 * reap that followed failed): the next run carries the title over, like
 * the ids, and its first reap finds the room by it. */
static void test_lost_room_title_carried_over_by_rotation(void)
{
    world w;
    if (!world_open(&w))
        goto out;
    char title[96], err[ERR_BUFSZ], old_run[sizeof w.st->run_id];
    snprintf(title, sizeof title, TITLE_PREFIX "%s #12345678", w.st->run_id);
    make_room(&w, title);
    snprintf(w.st->room_title, sizeof w.st->room_title, "%s", title);
    memcpy(old_run, w.st->run_id, sizeof old_run);
    w.st->phase = RUN_FAILED;
    UNIT_CHECK(state_save(&w.store, w.st, err) == ERR_OK, "save: %s", err);
    UNIT_CHECK(state_rotate(&w.store, &w.st, err) == ERR_OK, "rotate: %s", err);
    UNIT_CHECK(strcmp(w.st->run_id, old_run) != 0 && strcmp(w.st->room_title, title) == 0 &&
                   strcmp(w.st->carried_from, old_run) == 0,
               "the new run carries the title (carried from %s)", w.st->carried_from);
    provision_out out;
    UNIT_CHECK(provision(&w, &out, err) == ERR_OK && out.reaped == 1,
               "provisioning reaps the carried room first: %s (reaped %d)", err, out.reaped);
    live(&w, 1, 1, "only the new pair");
    UNIT_CHECK(reap(&w, err) == ERR_OK, "reap: %s", err);
    live(&w, 0, 0, "at the end");
out:
    world_close(&w);
}

const unit_case unit_cases[] = {
    {"provision_end_to_end", test_provision_end_to_end},
    {"fail_at_register", test_fail_at_register},
    {"fail_at_create_chat", test_fail_at_create_chat},
    {"fail_at_add_participant", test_fail_at_add_participant},
    {"failed_reap_keeps_id_and_is_retried_first", test_failed_reap_keeps_id_and_is_retried_first},
    {"reap_of_resources_already_gone", test_reap_of_resources_already_gone},
    {"sweep_rules", test_sweep_rules},
    {"production_refused_before_any_request", test_production_refused_before_any_request},
    {"bad_arguments", test_bad_arguments},
    {"agent_lost_mid_register_is_reaped_by_name", test_agent_lost_mid_register_is_reaped_by_name},
    {"room_lost_is_reaped_by_title", test_room_lost_is_reaped_by_title},
    {"room_create_stalled_then_reaped", test_room_create_stalled_then_reaped},
    {"killed_before_room_id_saved", test_killed_before_room_id_saved},
    {"lost_room_title_carried_over_by_rotation", test_lost_room_title_carried_over_by_rotation},
    {NULL, NULL},
};
