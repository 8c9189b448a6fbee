#include "ctestview.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h> /* strcasecmp */
#include <sys/stat.h>

#include "commands.h"
#include "ctx.h"
#include "phases.h"
#include "platform.h"
#include "redact.h"

#define LOG_DIR "Testing/Temporary"
#define END_OF_OUTPUT "<end of output>"

static const char *build_arg(int argc, char **argv)
{
    return argc >= 1 && argv[0][0] ? argv[0] : ".";
}

int ctestview_pre(int argc, char **argv)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/" CTESTVIEW_MARKER, build_arg(argc, argv));
    FILE *fp = fopen(path, "w");
    if (fp)
        fclose(fp);
    return 0;
}

/* One phase test's block from the log, as the operator should read it. */
typedef struct block {
    const phase_def *def;
    char *lines[256];
    int n;
    int dropped; /* lines past the 256th, left in CTest's log */
} block;

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The engine's line for a phase that failed or could not run. */
static int is_failure_line(const char *line)
{
    return starts(line, "FAILED ") || starts(line, "ERROR:");
}

static const char *verdict_of(const block *b)
{
    if (b->n > 0 && starts(b->lines[0], "SKIPPED:"))
        return "skipped";
    for (int i = 0; i < b->n; i++)
        if (is_failure_line(b->lines[i]))
            return "FAILED";
    for (int i = 0; i < b->n; i++)
        if (starts(b->lines[i], "PASSED ") || strstr(b->lines[i], " already passed at "))
            return "passed";
    return "ended without a verdict line (timed out or crashed?)";
}

/* The engine's per-phase `next:` (and the command under it) is left out:
 * one next command closes the whole story, after the brief status. The
 * "== phase..." banner is left out too: the block's header says the same. */
static int keep_line(const block *b, int i)
{
    const char *s = b->lines[i];
    if (starts(s, "== ") || starts(s, "next: "))
        return 0;
    return !(i > 0 && starts(b->lines[i - 1], "next: ") && starts(s, "  "));
}

/* A failed phase whose lines ctest already printed: its verdict lines. */
static void print_failed_shown_above(const block *b, FILE *out)
{
    redact_fprintf(out, "%s (%s): FAILED; its lines are above, where ctest printed them\n",
                   b->def->ctest_name, b->def->title);
    for (int i = 0; i < b->n; i++)
        if (is_failure_line(b->lines[i]))
            redact_fprintf(out, "  %s\n", b->lines[i]);
}

/* Returns 1 when the block only repeated the previous skip's reason. */
static int print_block(const block *b, int failures_shown, char *prev_skip, size_t cap,
                       const char *prev_name, FILE *out)
{
    const char *name = b->def->ctest_name;
    int kept[256], nk = 0;
    for (int i = 0; i < b->n; i++)
        if (keep_line(b, i))
            kept[nk++] = i;
    if (nk == 1) {
        const char *line = b->lines[kept[0]];
        if (starts(line, name) && line[strlen(name)] == ' ')
            line += strlen(name) + 1;
        if (starts(line, "SKIPPED:") && prev_skip[0] && !strcmp(line, prev_skip)) {
            redact_fprintf(out, "%s (%s): SKIPPED, the same reason as %s\n", name,
                           b->def->title, prev_name);
            return 1;
        }
        snprintf(prev_skip, cap, "%s", starts(line, "SKIPPED:") ? line : "");
        redact_fprintf(out, "%s (%s): %s\n", name, b->def->title, line);
        return 0;
    }
    prev_skip[0] = '\0';
    if (failures_shown && !strcmp(verdict_of(b), "FAILED")) {
        print_failed_shown_above(b, out);
        return 0;
    }
    redact_fprintf(out, "%s (%s): %s\n", name, b->def->title, verdict_of(b));
    for (int k = 0; k < nk; k++)
        redact_fprintf(out, "  %s\n", b->lines[kept[k]]);
    if (b->dropped)
        redact_fprintf(out, "  (%d more lines: Testing/Temporary/LastTest.log)\n", b->dropped);
    return 0;
}

/* Phases that already passed, in a row: one line for all of them, since
 * a resumed `ctest -R phase` would otherwise open with a screenful of
 * "already passed" before the step that matters. */
typedef struct passed_run {
    const phase_def *first, *last;
    int n;
    char line[512];
} passed_run;

static int is_already_passed(const block *b)
{
    return b->n == 1 && strstr(b->lines[0], " already passed at ") != NULL;
}

static void flush_passed(passed_run *pr, FILE *out)
{
    if (pr->n == 1) {
        const char *line = pr->line, *name = pr->first->ctest_name;
        if (starts(line, name) && line[strlen(name)] == ' ')
            line += strlen(name) + 1;
        redact_fprintf(out, "%s (%s): %s\n", name, pr->first->title, line);
    } else if (pr->n > 1) {
        redact_fprintf(out, "%s to %s (%d phases): already passed in this run; not re-run "
                            "(--again forces one)\n", pr->first->ctest_name,
                       pr->last->ctest_name, pr->n);
    }
    pr->n = 0;
}

/* "12/13 Testing: phase.05.initial" -> the phase, or NULL. */
static const phase_def *testing_line(const char *line)
{
    const char *t = strstr(line, " Testing: ");
    if (!t || line[0] < '0' || line[0] > '9')
        return NULL;
    const char *name = t + strlen(" Testing: ");
    return starts(name, "phase.") ? phase_find(name) : NULL;
}

int ctestview_print_log(const char *log_text, int failures_shown, FILE *out)
{
    char *text = strdup(log_text ? log_text : "");
    if (!text)
        return 0;
    block b = {0};
    char prev_skip[1024] = "", prev_name[96] = "";
    passed_run passed = {0};
    int found = 0, in_output = 0;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        const phase_def *def = testing_line(line);
        if (def) {
            b.def = def;
            b.n = b.dropped = 0;
            in_output = 0;
            continue;
        }
        if (!b.def)
            continue;
        if (!in_output) {
            in_output = starts(line, "Output:");
            continue;
        }
        if (b.n == 0 && starts(line, "----------") && !strchr(line, ' '))
            continue; /* the rule under "Output:" */
        char *end = strstr(line, END_OF_OUTPUT);
        if (end) {
            *end = '\0'; /* output without a final newline ends on this line */
            if (*line && b.n < 256)
                b.lines[b.n++] = line;
            else if (*line)
                b.dropped++;
            if (found++ == 0)
                redact_fprintf(out, "\n---- what each phase said ----\n");
            if (is_already_passed(&b)) {
                if (passed.n++ == 0) {
                    passed.first = b.def;
                    snprintf(passed.line, sizeof passed.line, "%s", b.lines[0]);
                }
                passed.last = b.def;
                b.def = NULL;
                in_output = 0;
                continue;
            }
            flush_passed(&passed, out);
            if (!print_block(&b, failures_shown, prev_skip, sizeof prev_skip, prev_name, out))
                snprintf(prev_name, sizeof prev_name, "%s", b.def->ctest_name);
            b.def = NULL;
            in_output = 0;
            continue;
        }
        if (b.n < 256)
            b.lines[b.n++] = line;
        else
            b.dropped++;
    }
    flush_passed(&passed, out);
    free(text);
    return found;
}

/* The whole file, NUL-terminated (caller frees); NULL when unreadable.
 * Bounded: a phase log is kilobytes, and a runaway log must not eat RAM. */
static char *read_text(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    size_t cap = 1 << 16, len = 0, n;
    char *text = malloc(cap + 1);
    while (text && (n = fread(text + len, 1, cap - len, fp)) > 0) {
        len += n;
        if (len == cap && cap < ((size_t)16 << 20)) {
            char *bigger = realloc(text, cap * 2 + 1);
            if (!bigger)
                break;
            text = bigger;
            cap *= 2;
        } else if (len == cap) {
            break;
        }
    }
    fclose(fp);
    if (text)
        text[len] = '\0';
    return text;
}

/* Whole seconds: st_mtim is not in macOS's POSIX mode, and the live log
 * (.tmp) is read first anyway, so a same-second tie never picks a stale one. */
static int64_t mtime_s(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return -1;
    return (int64_t)sb.st_mtime;
}

/* This invocation's log: the one CTest is writing, or the one it wrote,
 * never an earlier invocation's (older than the pre hook's marker). */
static char *read_live_log(const char *build)
{
    static const char *const names[] = {LOG_DIR "/LastTest.log.tmp", LOG_DIR "/LastTest.log"};
    char path[4096];
    snprintf(path, sizeof path, "%s/" CTESTVIEW_MARKER, build);
    int64_t began = mtime_s(path);
    if (began < 0)
        return NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", build, names[i]);
        if (mtime_s(path) < began)
            continue;
        char *text = read_text(path);
        if (text)
            return text;
    }
    return NULL;
}

/* CMake's false constants; anything else non-empty is true. */
static int cmake_true(const char *v)
{
    static const char *const no[] = {"0", "OFF", "NO", "FALSE", "N", "IGNORE", "NOTFOUND"};
    if (!v || !*v)
        return 0;
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (!strcasecmp(v, no[i]))
            return 0;
    size_t len = strlen(v);
    return !(len >= 9 && !strcasecmp(v + len - 9, "-NOTFOUND"));
}

int ctestview_failures_shown(const char *ctest_args, int n, const char *env_value)
{
    static const char *const shows[] = {"--output-on-failure", "-V", "--verbose", "-VV",
                                        "--extra-verbose"};
    const char *arg = ctest_args;
    for (int i = 0; arg && i < n; i++, arg += strlen(arg) + 1)
        for (size_t k = 0; k < sizeof shows / sizeof shows[0]; k++)
            if (!strcmp(arg, shows[k]))
                return 1;
    return cmake_true(env_value);
}

/* How the ctest that runs this hook was invoked. */
static int ctest_shows_failures(void)
{
    char args[16384];
    int n = plat_parent_argv(args, sizeof args);
    return ctestview_failures_shown(n > 0 ? args : NULL, n, getenv("CTEST_OUTPUT_ON_FAILURE"));
}

int ctestview_post(int argc, char **argv, const char *argv0)
{
    char *log = read_live_log(build_arg(argc, argv));
    int phases = log ? ctestview_print_log(log, ctest_shows_failures(), stdout) : 0;
    free(log);
    if (phases == 0)
        return 0;
    redact_fprintf(stdout, "---- where the run stands ----\n");
    smoke_ctx ctx;
    char err[ERR_BUFSZ];
    err_code rc = ctx_init(&ctx, argv0, err);
    if (rc != ERR_OK) {
        redact_fprintf(stdout, "ERROR: %s: %s\n", err_str(rc), err);
        return 0;
    }
    cmd_status_brief(&ctx);
    ctx_close(&ctx);
    fflush(stdout);
    return 0;
}
