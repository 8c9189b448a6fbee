/* The fake `uv`, found first on PATH inside the fake sandbox (cmd_exec.h).
 *
 *   uv sync --script FILE         FILE must exist; prints a short
 *                                 resolution summary, exit 0
 *   uv run [--script] FILE [ARGS...]
 *                                 FILE must exist; then becomes the program
 *                                 named by FAKE_UV_AGENT (the C stand-in for
 *                                 the Python agent) with ARGS; or, when
 *                                 FAKE_UV_AGENT_CMD is set (`band-smoke
 *                                 rehearse --agent CMD`), runs that command
 *                                 through /bin/sh -c from FILE's folder, in
 *                                 the same environment, with ARGS appended
 *                                 (`CMD --sdk-version`), the fake's own
 *                                 folder off PATH and FAKE_UV_AGENT_CMD
 *                                 unset (a `uv` in CMD is a real uv)
 *   uv --version                  a version line
 * -q/--quiet and --no-progress are accepted before the command's own
 * arguments. Anything else: `error: ...` on stderr, exit 2, as uv's usage
 * errors do. The dependency count printed by sync is that of the script's
 * PEP 723 block, so a test can see the script was read. */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define USAGE_EXIT 2

static int fail(const char *fmt, const char *arg)
{
    fputs("error: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return USAGE_EXIT;
}

/* Lines of the `dependencies = [...]` list in a PEP 723 block. */
static int count_dependencies(FILE *fp)
{
    char line[1024];
    int in_list = 0, n = 0;
    while (fgets(line, sizeof line, fp)) {
        if (strncmp(line, "#", 1) != 0)
            continue;
        if (strstr(line, "dependencies") && strchr(line, '['))
            in_list = 1;
        else if (in_list && strchr(line, ']'))
            in_list = 0;
        else if (in_list && strchr(line, '"'))
            n++;
    }
    return n;
}

static int skip_quiet(int argc, char **argv, int i)
{
    while (i < argc && (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet") ||
                        !strcmp(argv[i], "--no-progress")))
        i++;
    return i;
}

static int sync_script(int argc, char **argv, int i)
{
    i = skip_quiet(argc, argv, i);
    if (i + 2 != argc || strcmp(argv[i], "--script") != 0)
        return fail("%s", "usage: uv sync --script FILE");
    FILE *fp = fopen(argv[i + 1], "r");
    if (!fp)
        return fail("Failed to read script: %s", argv[i + 1]);
    int deps = count_dependencies(fp);
    fclose(fp);
    printf("Resolved %d package%s in 3ms\nAudited %d package%s in 0.02ms\n", deps,
           deps == 1 ? "" : "s", deps, deps == 1 ? "" : "s");
    return 0;
}

/* PATH without the folders whose `uv` is this very program, so a `uv` in
 * the agent command is the developer's real one (or not found), never the
 * fake again. */
static void drop_self_from_path(void)
{
    struct stat self, other;
    const char *path = getenv("PATH");
    if (stat("/proc/self/exe", &self) != 0 || !path)
        return;
    char *kept = calloc(strlen(path) + 1, 1), *copy = strdup(path);
    if (!kept || !copy) {
        free(kept);
        free(copy);
        return;
    }
    for (char *save = NULL, *dir = strtok_r(copy, ":", &save); dir;
         dir = strtok_r(NULL, ":", &save)) {
        char uv[4096];
        snprintf(uv, sizeof uv, "%s/uv", dir);
        if (stat(uv, &other) == 0 && other.st_dev == self.st_dev && other.st_ino == self.st_ino)
            continue;
        if (*kept)
            strcat(kept, ":");
        strcat(kept, dir);
    }
    setenv("PATH", kept, 1);
    free(kept);
    free(copy);
}

/* The agent under rehearsal, given as a shell command, started where the
 * script lies (the SDK developer's `uv run --script agent.py`, or a
 * Python with band-sdk installed, finds agent.py there). The command
 * never reaches this fake again: it leaves PATH, and the command variable
 * goes, so nothing can loop. */
static int run_command(const char *cmd, int argc, char **argv, int i)
{
    drop_self_from_path();
    unsetenv("FAKE_UV_AGENT_CMD");
    const char *script = argv[i];
    char folder[4096];
    snprintf(folder, sizeof folder, "%s", script);
    const char *dir = dirname(folder);
    if (chdir(dir) != 0)
        return fail("cannot enter the script's folder: %s", strerror(errno));
    /* sh -c 'CMD "$@"' sh ARGS...: the script's arguments follow the command */
    char *line = malloc(strlen(cmd) + 8);
    char **args = calloc((size_t)(argc - i) + 4, sizeof *args);
    if (!line || !args)
        return fail("%s", "out of memory");
    sprintf(line, "%s \"$@\"", cmd);
    int n = 0;
    args[n++] = "sh";
    args[n++] = "-c";
    args[n++] = line;
    args[n++] = "sh";
    for (int k = i + 1; k < argc; k++)
        args[n++] = argv[k];
    args[n] = NULL;
    execv("/bin/sh", args);
    fprintf(stderr, "error: cannot run /bin/sh: %s\n", strerror(errno));
    return USAGE_EXIT;
}

static int run_script(int argc, char **argv, int i)
{
    i = skip_quiet(argc, argv, i);
    if (i < argc && !strcmp(argv[i], "--script"))
        i++;
    if (i >= argc)
        return fail("%s", "usage: uv run [--script] FILE [ARGS...]");
    if (access(argv[i], R_OK) != 0)
        return fail("Failed to read script: %s", argv[i]);
    const char *given = getenv("FAKE_UV_AGENT_CMD");
    if (given && *given) {
        char *cmd = strdup(given); /* unsetenv may free the environment's copy */
        return cmd ? run_command(cmd, argc, argv, i) : fail("%s", "out of memory");
    }
    const char *agent = getenv("FAKE_UV_AGENT");
    if (!agent || !*agent)
        return fail("%s", "FAKE_UV_AGENT is not set: the fake uv runs the stand-in agent");
    /* The script's own arguments follow it; the stand-in gets those only. */
    argv[i] = (char *)agent;
    execvp(agent, argv + i);
    fprintf(stderr, "error: cannot run %s: %s\n", agent, strerror(errno));
    return USAGE_EXIT;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "--version")) {
        printf("uv 0.8.17 (fake)\n");
        return 0;
    }
    if (argc >= 2 && !strcmp(argv[1], "sync"))
        return sync_script(argc, argv, 2);
    if (argc >= 2 && !strcmp(argv[1], "run"))
        return run_script(argc, argv, 2);
    return fail("unrecognized subcommand '%s'", argc >= 2 ? argv[1] : "");
}
