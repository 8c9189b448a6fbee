#include "phases.h"

#include <stdarg.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "actions.h"
#include "redact.h"

static const phase_def table[PH__COUNT] = {
    {PH_START, "start", "phase.01.start", "Start", NULL, 0, act_start, NULL},
    {PH_PREFLIGHT, "preflight", "phase.02.preflight", "Preflight", NULL, 0,
     act_preflight, NULL},
    {PH_SANDBOX, "sandbox", "phase.03.sandbox", "Sandbox", NULL, 0, act_sandbox, NULL},
    {PH_LAUNCH, "launch", "phase.04.launch", "Agent launch", NULL, 0, act_launch,
     "The agent is up inside the sandbox."},
    {PH_INITIAL, "initial", "phase.05.initial", "Initial probe", "initial", 0,
     act_probe, NULL},
    {PH_WIFI_CHECKPOINT, "wifi-checkpoint", "phase.06.wifi-checkpoint",
     "Wi-Fi checkpoint", NULL, 1, act_wifi_checkpoint,
     "OPERATOR STEP (Wi-Fi): turn Wi-Fi off now and keep it off until agent.log shows\n"
     "  a 'WebSocket disconnected' line (usually within a minute), then turn it back on,\n"
     "  wait for 'WebSocket reconnected' and run the same ctest command again.\n"
     "  At this machine, `build/band-smoke watch` follows agent.log and says when.\n"
     "  This step ends here: an AI client ends its turn now (it does not run watch)\n"
     "  and resumes only when the operator says connectivity is back."},
    {PH_AFTER_WIFI, "after-wifi-reconnect", "phase.07.after-wifi-reconnect",
     "After Wi-Fi reconnect", "after-wifi-reconnect", 0, act_probe, NULL},
    {PH_SLEEP_CHECKPOINT, "sleep-checkpoint", "phase.08.sleep-checkpoint",
     "Sleep/wake checkpoint", NULL, 1, act_sleep_checkpoint,
     "OPERATOR STEP (sleep/wake, mandatory): put the host to sleep for about a minute,\n"
     "  then wake it and run the same ctest command again. The suite measures the sleep\n"
     "  itself; if it cannot, confirm with `build/band-smoke confirm sleep-wake`.\n"
     "  `build/band-smoke watch`, started before the sleep, reports the measured sleep\n"
     "  and the agent's reconnect on wake. An AI client ends its turn now: the host\n"
     "  sleeping suspends it too."},
    {PH_AFTER_SLEEP, "after-sleep-wake", "phase.09.after-sleep-wake",
     "After sleep/wake", "after-sleep-wake", 0, act_probe, NULL},
    {PH_DAEMON_RESTART, "daemon-restart", "phase.10.daemon-restart", "Daemon restart",
     "after-daemon-restart", 0, act_daemon_restart, NULL},
    {PH_CLEANUP, "cleanup", "phase.11.cleanup", "Cleanup", NULL, 0, act_cleanup, NULL},
    {PH_REPORT, "report", "phase.12.report", "Report", NULL, 0, act_report, NULL},
    {PH_TEARDOWN, "teardown", "phase.13.teardown", "Teardown", NULL, 0, act_teardown,
     "The disposable sandbox is gone; the evidence stays in the state folder."},
};

const phase_def *phase_all(void)
{
    return table;
}

const phase_def *phase_get(phase_id id)
{
    return (int)id >= 0 && id < PH__COUNT ? &table[id] : NULL;
}

const phase_def *phase_find(const char *name)
{
    for (int i = 0; name && i < PH__COUNT; i++)
        if (!strcmp(name, table[i].name) || !strcmp(name, table[i].ctest_name))
            return &table[i];
    return NULL;
}

/* Commands are shown relative to the project root when the build folder is
 * inside it, since that is where operators and AI clients run them. */
static const char *build_dir(void)
{
    static const char root[] = SMOKE_SOURCE_DIR "/";
    const char *dir = SMOKE_BUILD_DIR;
    return strncmp(dir, root, sizeof root - 1) == 0 ? dir + sizeof root - 1 : dir;
}

void phase_command(const phase_def *def, char *buf, size_t cap)
{
    char pattern[96];
    size_t n = 0;
    for (const char *s = def->ctest_name; *s && n + 2 < sizeof pattern; s++) {
        if (*s == '.')
            pattern[n++] = '\\';
        pattern[n++] = *s;
    }
    pattern[n] = '\0';
    snprintf(buf, cap, "ctest --test-dir %s -R '^%s$' --output-on-failure",
             build_dir(), pattern);
}

void phase_smoke_command(const char *args, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/band-smoke %s", build_dir(), args);
}

int phase_check_at(phase_env *env, int ok, const char *file, int line,
                   const char *fmt, ...)
{
    (void)env;
    char msg[1024], clean[1024];
    if (ok) {
        CU_assertImplementation(CU_TRUE, (unsigned)line, "ok", file, "", CU_FALSE);
        return 1;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    redact_into(msg, clean, sizeof clean);
    CU_assertImplementation(CU_FALSE, (unsigned)line, clean, file, "", CU_FALSE);
    return 0;
}

void phase_note(phase_env *env, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(env->note, sizeof env->note, fmt, ap);
    va_end(ap);
}

void phase_say(phase_env *env, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ctx_say(env->ctx, "%s", msg);
}
