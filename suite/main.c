/* band-smoke: the one product executable.
 *
 * `band-smoke phase NAME` runs one staging phase (what ctest runs); the
 * other commands read or amend the run. Exit codes: 0 passed (or already
 * passed), 1 failed, 2 usage, 77 skipped by a gate, 128 + N stopped by
 * signal N (SIGINT 130, SIGTERM 143, SIGHUP 129).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "ctestview.h"
#include "ctx.h"
#include "engine.h"
#include "launcher.h"
#include "phases.h"
#include "platform.h"
#include "preflight.h"
#include "redact.h"
#include "sbx.h"
#include "sig.h"
#include "watch.h"

static const char usage_text[] =
    "usage: band-smoke COMMAND [ARGS]\n"
    "  phase NAME [--again]            run one phase; NAME is start, preflight, sandbox,\n"
    "                                  launch, initial, wifi-checkpoint,\n"
    "                                  after-wifi-reconnect, sleep-checkpoint,\n"
    "                                  after-sleep-wake, daemon-restart, cleanup, report,\n"
    "                                  teardown, or the ctest name (phase.05.initial)\n"
    "  status [--brief]                where the run stands and the exact next command\n"
    "  record-phase PHASE              started|awaiting-wifi-recovery|awaiting-sleep-wake|\n"
    "                                  daemon-restart|completed|failed\n"
    "  record-observation CHECK TEXT   sleep_wake|daemon_restart, free text\n"
    "  confirm sleep-wake              the operator's word that the host slept\n"
    "  watch [--timeout SECONDS]       at a checkpoint: follow agent.log and the clocks live\n"
    "  report                          render evidence.md and junit.xml now\n"
    "  preflight                       the preflight checks alone\n"
    "  rehearse [ARGS]                 the whole smoke offline, against built-in fakes\n"
    "  --version                       the suite version, one line\n"
    "exit codes: 0 passed, 1 failed, 2 usage, 77 skipped (gated), 128+N stopped by signal N\n";

static int usage(void)
{
    fputs(usage_text, stderr);
    return ENGINE_EXIT_USAGE;
}

static int run_one_phase(smoke_ctx *ctx, int argc, char **argv)
{
    int again = 0;
    const char *name = NULL;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--again"))
            again = 1;
        else if (!name)
            name = argv[i];
        else
            return usage();
    }
    const phase_def *def = phase_find(name);
    if (!def) {
        fprintf(stderr, "band-smoke: unknown phase '%s'\n", name ? name : "");
        return usage();
    }
    return engine_run_phase(ctx, def, again);
}

/* `band-smoke preflight`: the checks alone, printed, with no run needed;
 * exit 1 when any fails. */
static int preflight(smoke_ctx *ctx)
{
    char err[ERR_BUFSZ];
    sbx_ctx sbx;
    err_code rc = ctx_sbx(ctx, &sbx, err);
    if (rc == ERR_OK) {
        preflight_input in = {&ctx->cfg, &sbx, getenv("HOME")};
        preflight_result r;
        rc = preflight_run(&in, &r, err);
        preflight_print(&r, ctx->out);
    }
    if (rc != ERR_OK)
        redact_fprintf(ctx->out, "preflight: %s\n", err);
    return rc == ERR_OK ? 0 : 1;
}

/* The rehearsal driver is a separate executable beside this one, so the
 * product knows nothing of the fakes but that sibling's name. */
static int rehearse(smoke_ctx *ctx, int argc, char **argv)
{
    char driver[STATE_PATH_SZ + 32];
    const char *slash = strrchr(ctx->self_exe, '/');
    if (!slash) {
        fprintf(stderr, "band-smoke: cannot locate this executable to find the rehearsal\n");
        return 1;
    }
    snprintf(driver, sizeof driver, "%.*s/band-smoke-rehearsal",
             (int)(slash - ctx->self_exe), ctx->self_exe);
    char *args[64];
    int n = 0;
    args[n++] = driver;
    for (int i = 0; i < argc && n < 63; i++)
        args[n++] = argv[i];
    args[n] = NULL;
    fflush(NULL);
    execv(driver, args);
    fprintf(stderr, "band-smoke: the rehearsal driver %s is not built (build the tests, "
                    "e.g. scripts/bootstrap.sh)\n", driver);
    return 1;
}

static int dispatch(smoke_ctx *ctx, const char *cmd, int argc, char **argv)
{
    if (!strcmp(cmd, "phase"))
        return run_one_phase(ctx, argc, argv);
    if (!strcmp(cmd, "status") && argc == 0)
        return cmd_status(ctx);
    if (!strcmp(cmd, "status") && argc == 1 && !strcmp(argv[0], "--brief"))
        return cmd_status_brief(ctx);
    if (!strcmp(cmd, "record-phase"))
        return cmd_record_phase(ctx, argc, argv);
    if (!strcmp(cmd, "record-observation"))
        return cmd_record_observation(ctx, argc, argv);
    if (!strcmp(cmd, "confirm"))
        return cmd_confirm(ctx, argc, argv);
    if (!strcmp(cmd, "watch"))
        return watch_main(ctx, argc, argv);
    if (!strcmp(cmd, "report") && argc == 0)
        return cmd_report(ctx);
    if (!strcmp(cmd, "preflight") && argc == 0)
        return preflight(ctx);
    if (!strcmp(cmd, "rehearse"))
        return rehearse(ctx, argc, argv);
    return usage();
}

int main(int argc, char **argv)
{
    /* Before anything holds a key: no core file may ever carry one. */
    plat_harden_process();
    /* Line-buffered so ctest and an AI client see each line as it happens,
     * and a killed process loses at most one line. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* A peer closing mid-write must be an error return, not a death: curl
     * runs with NOSIGNAL, so nobody else ignores SIGPIPE for us. */
    signal(SIGPIPE, SIG_IGN);
    if (argc >= 2 && !strcmp(argv[1], "_launcher"))
        return launcher_main(argc - 2, argv + 2);
    if (argc == 2 && !strcmp(argv[1], "--version"))
        return printf("band-smoke %s\n", SMOKE_VERSION) < 0;
    /* CTest's hooks (ctestview.h): before any settings are read, since
     * they run for every ctest invocation, offline ones included. */
    if (argc >= 2 && !strcmp(argv[1], "_ctest-pre"))
        return ctestview_pre(argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "_ctest-post"))
        return ctestview_post(argc - 2, argv + 2, argv[0]);
    /* SIGINT, SIGTERM, SIGHUP end the running child's group and the phase
     * is recorded as interrupted (sig.h); exit 128 + the signal. */
    sig_install();
    if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help") ||
        !strcmp(argv[1], "-h"))
        return argc < 2 ? usage() : (fputs(usage_text, stdout), 0);

    smoke_ctx ctx;
    char err[ERR_BUFSZ];
    err_code rc = ctx_init(&ctx, argv[0], err);
    if (rc != ERR_OK) {
        redact_fprintf(stdout, "ERROR: %s: %s\n", err_str(rc), err);
        return 1;
    }
    int code = dispatch(&ctx, argv[1], argc - 2, argv + 2);
    ctx_close(&ctx);
    return sig_pending() ? sig_exit_code() : code;
}
