/* The fake `sbx`: Docker's sandbox CLI, faithful enough for the offline
 * tests and the rehearsal (reference/sbx-cli.md section 6). Its world is
 * described in fsbx.h, its commands in cmd_*.h, its daemon and proxy in
 * sandboxd.h and proxy.h, its fault controls in cmd_fault.h.
 *
 * This file only dispatches: global flags, the unsupported --version,
 * sign-in, the hang fault, and the daemon auto-start banner that every
 * command but version, daemon and the hidden ones prints when it finds the
 * daemon down. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cmd_daemon.h"
#include "cmd_exec.h"
#include "cmd_fault.h"
#include "cmd_policy.h"
#include "cmd_sandbox.h"
#include "daemon.h"
#include "fsbx.h"

enum {
    AUTOSTART = 1, /* start the daemon first, with the banner */
    SIGNED_IN = 2, /* refused under FAKE_SBX_SIGNED_OUT=1 */
    HANGABLE = 4,  /* subject to the hang fault */
};

typedef struct command {
    const char *name;
    int (*run)(const fsbx *f, int argc, char **argv);
    int flags;
} command;

static const command commands[] = {
    {"version", cmd_version, HANGABLE},
    {"ls", cmd_ls, AUTOSTART | SIGNED_IN | HANGABLE},
    {"list", cmd_ls, AUTOSTART | SIGNED_IN | HANGABLE},
    {"create", cmd_create, AUTOSTART | SIGNED_IN | HANGABLE},
    {"exec", cmd_exec, AUTOSTART | SIGNED_IN | HANGABLE},
    {"stop", cmd_stop, AUTOSTART | SIGNED_IN | HANGABLE},
    {"rm", cmd_rm, AUTOSTART | SIGNED_IN | HANGABLE},
    {"reset", cmd_reset, HANGABLE},
    {"policy", cmd_policy, AUTOSTART | SIGNED_IN | HANGABLE},
    {"daemon", cmd_daemon, HANGABLE},
    {"_fault", cmd_fault, 0},
    {"_ps", cmd_ps, 0},
    {"__daemon", cmd_daemon_process, 0},
    {NULL, NULL, 0},
};

static int usage(void)
{
    printf("Usage: sbx COMMAND\n\n"
           "The fake sbx of band-sandbox-staging-smoke (tests only).\n\n"
           "Commands:\n"
           "  version, ls, create, exec, stop, rm, reset, policy, daemon\n"
           "Hidden: _fault, _ps (see tests/fakes/sbx/cmd_fault.h)\n");
    return 0;
}

static const command *find(const char *name)
{
    for (const command *c = commands; c->name; c++)
        if (!strcmp(c->name, name))
            return c;
    return NULL;
}

int main(int argc, char **argv)
{
    /* A daemon that dies mid-request must not kill the CLI with SIGPIPE. */
    signal(SIGPIPE, SIG_IGN);
    fsbx f;
    char err[ERR_BUFSZ];
    if (fsbx_init(&f, argv[0], err) != ERR_OK)
        return fsbx_fail(NULL, "%s", err);
    int i = 1;
    while (i < argc && (!strcmp(argv[i], "-D") || !strcmp(argv[i], "--debug")))
        i++;
    if (i >= argc)
        return fsbx_fail(NULL, "the fake sbx has no dashboard: give a command");
    const char *name = argv[i];
    if (!strcmp(name, "-h") || !strcmp(name, "--help") || !strcmp(name, "help"))
        return usage();
    const command *c = find(name);
    if (!c)
        return name[0] == '-' ? fsbx_fail(NULL, "unknown flag: %s", name)
                              : fsbx_fail("Run 'sbx --help' for usage.",
                                          "unknown command \"%s\" for \"sbx\"", name);
    int rc = c->flags & HANGABLE ? fault_hang_if_asked(&f, argc - i, argv + i) : 0;
    if (rc)
        return rc;
    if ((c->flags & SIGNED_IN) && fsbx_flag("FAKE_SBX_SIGNED_OUT"))
        return fsbx_fail("Sign in with: sbx login", "Not authenticated to Docker");
    if ((c->flags & AUTOSTART) && daemon_autostart(&f))
        return 1;
    return c->run(&f, argc - i, argv + i);
}
