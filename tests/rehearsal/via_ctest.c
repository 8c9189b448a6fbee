#define _GNU_SOURCE /* memmem; tests only */
#include "via_ctest.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "phases.h"
#include "run.h"
#include "tk.h"

#define NPHASES 13
#define STORY_END "---- where the run stands ----"

/* The build folder's tests and CTest hooks, included: ctest skips the
 * build's subdirs() (their folders are not here), so only the phase tests
 * are listed, which are the operator's. */
static int copy_tests(rehearsal *r, const char *build)
{
    static const char *const files[] = {"CTestTestfile.cmake", "CTestCustom.cmake"};
    for (int i = 0; i < 2; i++) {
        char from[W_PATH * 2], to[W_PATH * 2], text[W_PATH * 3];
        snprintf(from, sizeof from, "%s/%s", build, files[i]);
        if (!check(r, access(from, R_OK) == 0, "cannot read %s", from))
            return -1;
        snprintf(to, sizeof to, "%s/%s", r->ctest_dir, files[i]);
        snprintf(text, sizeof text, "include(\"%s\")\n", from);
        tk_write(to, text);
    }
    return 0;
}

int via_ctest_open(rehearsal *r)
{
    if (r->ctest_dir[0])
        return 0; /* already open */
    char exe[W_PATH];
    snprintf(exe, sizeof exe, "%s", r->w.band_smoke);
    const char *build = dirname(exe);
    snprintf(r->ctest_dir, sizeof r->ctest_dir, "%s/ctest", r->w.root);
    if (!check(r, mkdir(r->ctest_dir, 0700) == 0, "cannot create %s", r->ctest_dir))
        return -1;
    if (copy_tests(r, build) != 0)
        return -1;
    say(r, "steps run through ctest: the phase tests and hooks of %s, copied to %s", build,
        r->ctest_dir);
    return 0;
}

/* " 5/13 Test  #5: phase.05.initial .....   Passed    0.10 sec" */
static void read_results(const char *text, int status[NPHASES])
{
    for (int i = 0; i < NPHASES; i++)
        status[i] = -1;
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        char buf[512];
        snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), line);
        const char *name = strstr(buf, ": phase.");
        if (strstr(buf, " Test ") && name) {
            char test[64];
            sscanf(name + 2, "%63s", test);
            const phase_def *d = phase_find(test);
            if (d)
                status[d->id] = strstr(buf, "***Skipped") ? 77
                                : strstr(buf, " Passed ") ? 0 : 1;
        }
        line = nl ? nl + 1 : NULL;
    }
}

/* The line of the story that starts with this phase's ctest name. */
static const char *story_line(const char *story, const char *ctest_name)
{
    char head[96];
    snprintf(head, sizeof head, "\n%s (", ctest_name);
    return story ? strstr(story, head) : NULL;
}

/* "phase.01.start to phase.06.wifi-checkpoint (6 phases): already passed"
 * covers phase `id`. */
static int in_passed_range(const char *story, phase_id id)
{
    for (const char *p = story; p && (p = strstr(p, "\nphase.")) != NULL; p++) {
        char first[64], last[64];
        if (sscanf(p + 1, "%63s to %63s (", first, last) != 2 ||
            !strstr(p, " phases): already passed"))
            continue;
        const phase_def *a = phase_find(first), *b = phase_find(last);
        if (a && b && a->id <= id && id <= b->id)
            return 1;
    }
    return 0;
}

static void check_screen(rehearsal *r, const char *what, const char *text,
                         const int status[NPHASES])
{
    const char *story = strstr(text, "---- what each phase said ----");
    const char *end = strstr(text, STORY_END);
    int ran = 0;
    for (int i = 0; i < NPHASES; i++) {
        if (status[i] < 0)
            continue;
        ran++;
        const phase_def *d = phase_get((phase_id)i);
        const char *line = story_line(story, d->ctest_name);
        if (!line && status[i] == 0 && in_passed_range(story, d->id))
            continue;
        if (!check(r, line != NULL, "%s: %s ran but its lines are not on the screen", what,
                   d->ctest_name))
            continue;
        const char *eol = strchr(line + 1, '\n');
        int shown_skip = eol && memmem(line, (size_t)(eol - line), "SKIPPED", 7) != NULL;
        if (status[i] == 77)
            check(r, shown_skip, "%s: %s was skipped but its SKIPPED reason is not shown",
                  what, d->ctest_name);
    }
    check(r, strstr(text, "Run Summary:") == NULL, "%s: CUnit's run summary is on the screen",
          what);
    if (!ran)
        return;
    const char *next = end ? strstr(end, "\nnext: ") : NULL;
    check(r, next && (strstr(next, "ctest --test-dir ") || strstr(next, "band-smoke ")),
          "%s: the screen does not end with the next command", what);
}

#define CTEST_ARGC 6

/* The command as README.md and SKILL.md give it, run on the copy. */
static void ctest_argv(rehearsal *r, const char *regex, char *argv[CTEST_ARGC + 1])
{
    char *cmd[] = {SMOKE_CTEST, "--test-dir", r->ctest_dir, "-R", (char *)regex,
                   "--output-on-failure", NULL};
    memcpy(argv, cmd, sizeof cmd);
}

int via_ctest_start(rehearsal *r, const char *regex)
{
    char *argv[CTEST_ARGC + 1];
    ctest_argv(r, regex, argv);
    say(r, "$ ctest --test-dir %s -R %s --output-on-failure, in the background", r->ctest_dir,
        regex);
    return run_background(&r->w, argv);
}

int step_ctest(rehearsal *r, const char *regex, int status[NPHASES], char **text)
{
    for (int i = 0; i < NPHASES; i++)
        status[i] = -1;
    if (text)
        *text = NULL;
    char *argv[CTEST_ARGC + 1];
    ctest_argv(r, regex, argv);
    say(r, "$ ctest --test-dir %s -R %s --output-on-failure", r->ctest_dir, regex);
    run_out out;
    int64_t t0 = clock_mono_ms();
    int rc = run_child(&r->w, argv, 600000, "          | ", &out);
    read_results(out.text, status);
    int failed = 0;
    for (int i = 0; i < NPHASES; i++)
        failed |= status[i] == 1;
    say(r, "ctest -R %s -> exit %d (%.1f s)", regex, rc, (clock_mono_ms() - t0) / 1000.0);
    check(r, rc == (failed ? 8 : 0), "ctest -R %s: exit %d, expected %d", regex, rc,
          failed ? 8 : 0);
    check_screen(r, regex, out.text, status);
    if (text)
        *text = out.text;
    else
        run_out_free(&out);
    return rc;
}

int step_ctest_phase(rehearsal *r, const char *phase, int want_exit)
{
    const phase_def *d = phase_find(phase);
    if (!check(r, d != NULL, "no phase named %s", phase))
        return -1;
    char regex[96];
    size_t n = 0;
    regex[n++] = '^';
    for (const char *s = d->ctest_name; *s && n + 3 < sizeof regex; s++) {
        if (*s == '.')
            regex[n++] = '\\';
        regex[n++] = *s;
    }
    regex[n++] = '$';
    regex[n] = '\0';
    int status[NPHASES];
    int rc = step_ctest(r, regex, status, NULL);
    if (rc == -2)
        return rc;
    int got = status[d->id];
    check(r, got == want_exit, "%s through ctest: %s, expected %s", d->ctest_name,
          got == 0 ? "passed" : got == 77 ? "skipped" : got == 1 ? "failed" : "not run",
          want_exit == 0 ? "passed" : want_exit == 77 ? "skipped" : "failed");
    return got;
}

int step_ctest_pass(rehearsal *r, const char *last_passing, const char *operator_step)
{
    const phase_def *last = phase_find(last_passing);
    int status[NPHASES];
    char *text = NULL;
    int before = r->failures;
    if (step_ctest(r, "phase", status, &text) == -2)
        return 0;
    for (int i = 0; i < NPHASES; i++) {
        int want = last && i <= (int)last->id ? 0 : 77;
        check(r, status[i] == want, "ctest -R phase: %s %s, expected %s",
              phase_get((phase_id)i)->ctest_name,
              status[i] == 0 ? "passed" : status[i] == 77 ? "skipped"
              : status[i] == 1 ? "failed" : "did not run",
              want ? "skipped (the run is held)" : "passed");
    }
    if (operator_step)
        check(r, text && strstr(text, operator_step) != NULL,
              "ctest -R phase: \"%s\" is not on the screen", operator_step);
    free(text);
    return r->failures == before;
}
