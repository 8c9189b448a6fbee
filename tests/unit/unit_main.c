/* The runner every unit-NAME executable shares: one suite, its cases in
 * order, CUnit's verbose basic interface, exit 1 on any failure record.
 *
 *   unit-NAME                 every case
 *   unit-NAME CASE...         these cases (an unknown name is an error)
 *   unit-NAME --part K/N      every N-th case from the K-th (1 <= K <= N):
 *                             the N parts together run every case once,
 *                             without a second list of its cases; one part
 *                             of --jobs N, run alone
 *   unit-NAME --jobs N        the N parts at once, each in a child process
 *                             of its own; their output printed whole, part
 *                             by part, once all have ended. The cases mostly
 *                             wait on timers and peers, so this is how one
 *                             ctest slot keeps several of them waiting at
 *                             once (Linux: children die with the runner)
 *   unit-NAME --list          the case names, one a line
 *
 * Each case's wall time is printed after it ("time: N ms"): where a
 * binary's seconds go, for scripts/bench-suite.sh's readers. */
#include "unit.h"

#include "clock.h"

#include <CUnit/Basic.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

int unit_check(int ok, int line, const char *file, const char *fmt, ...)
{
    if (ok) {
        CU_assertImplementation(CU_TRUE, (unsigned)line, "ok", file, "", CU_FALSE);
        return 1;
    }
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    CU_assertImplementation(CU_FALSE, (unsigned)line, msg, file, "", CU_FALSE);
    return 0;
}

/* The one piece of runner state CUnit's setup/teardown hooks need: they
 * take no argument. */
static int64_t case_started_ms;

static void case_setup(void)
{
    case_started_ms = clock_mono_ms();
}

static void case_teardown(void)
{
    printf("\n    time: %lld ms ", (long long)(clock_mono_ms() - case_started_ms));
    fflush(stdout);
}

typedef struct selection {
    int part, parts;    /* --part K/N; 1/1 = all */
    char **names;       /* explicit case names, or NULL */
    int nnames;
} selection;

/* "K/N" with 1 <= K <= N <= 64. */
static int parse_part(const char *text, selection *sel)
{
    char *end;
    long k = strtol(text, &end, 10);
    if (end == text || *end != '/')
        return 0;
    const char *rest = end + 1;
    long n = strtol(rest, &end, 10);
    if (end == rest || *end || n < 1 || n > 64 || k < 1 || k > n)
        return 0;
    sel->part = (int)k;
    sel->parts = (int)n;
    return 1;
}

static int selected(const selection *sel, int index, const char *name)
{
    if (sel->names) {
        for (int i = 0; i < sel->nnames; i++)
            if (strcmp(sel->names[i], name) == 0)
                return 1;
        return 0;
    }
    return index % sel->parts == sel->part - 1;
}

/* Every name asked for must be a case: a typo must not pass as "ran 0". */
static int names_exist(const selection *sel)
{
    for (int i = 0; i < sel->nnames; i++) {
        const unit_case *c = unit_cases;
        while (c->name && strcmp(c->name, sel->names[i]) != 0)
            c++;
        if (!c->name) {
            fprintf(stderr, "no test case %s\n", sel->names[i]);
            return 0;
        }
    }
    return 1;
}

static int usage(const char *self)
{
    fprintf(stderr, "usage: %s [CASE... | --part K/N | --jobs N | --list]\n", self);
    return 2;
}

static int run_selection(const selection *sel);

/* Copies what a part printed (a temp file) to stdout. */
static void print_part(FILE *fp)
{
    char buf[8192];
    rewind(fp);
    for (size_t n; (n = fread(buf, 1, sizeof buf, fp)) > 0;)
        fwrite(buf, 1, n, stdout);
    fclose(fp);
}

/* --jobs N: part k of N in child k, output kept apart until the end.
 * The worst exit code of the parts (a child killed by a signal is 1). */
static int run_parts_at_once(int parts)
{
    int cases = 0;
    while (unit_cases[cases].name)
        cases++;
    if (parts > cases) /* a part with no case would be an error */
        parts = cases;
    pid_t pid[64];
    FILE *out[64];
    pid_t runner = getpid();
    fflush(stdout);
    for (int k = 0; k < parts; k++) {
        out[k] = tmpfile();
        if (!out[k])
            return 2;
        pid[k] = fork();
        if (pid[k] < 0)
            return 2;
        if (pid[k] == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL); /* a ctest timeout ends them all */
            if (getppid() != runner || dup2(fileno(out[k]), 1) < 0 || dup2(1, 2) < 0)
                _exit(2);
            selection sel = {k + 1, parts, NULL, 0};
            fflush(NULL);
            _exit(run_selection(&sel));
        }
    }
    int worst = 0;
    for (int k = 0; k < parts; k++) {
        int status = 0;
        while (waitpid(pid[k], &status, 0) < 0 && errno == EINTR)
            ;
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
        printf("\n==== part %d/%d: %s ====\n", k + 1, parts,
               code == 0 ? "passed" : WIFSIGNALED(status) ? "killed by a signal" : "FAILED");
        print_part(out[k]);
        if (code > worst)
            worst = code;
    }
    return worst;
}

int main(int argc, char **argv)
{
    selection sel = {1, 1, NULL, 0};
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (const unit_case *c = unit_cases; c->name; c++)
            puts(c->name);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--jobs") == 0) {
        char *end = NULL;
        long n = argc == 3 ? strtol(argv[2], &end, 10) : 0;
        if (!end || *end || n < 1 || n > 64)
            return usage(argv[0]);
        return n == 1 ? run_selection(&sel) : run_parts_at_once((int)n);
    }
    if (argc > 1 && strcmp(argv[1], "--part") == 0) {
        if (argc != 3 || !parse_part(argv[2], &sel))
            return usage(argv[0]);
    } else if (argc > 1) {
        sel.names = argv + 1;
        sel.nnames = argc - 1;
        if (!names_exist(&sel))
            return 2;
    }
    return run_selection(&sel);
}

/* Registers the selected cases and runs them: 0 all passed, 1 a failure
 * record, 2 nothing could be registered. */
static int run_selection(const selection *sel)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    CU_pSuite suite = CU_add_suite_with_setup_and_teardown("unit", NULL, NULL, case_setup,
                                                           case_teardown);
    int added = 0, index = 0;
    for (const unit_case *c = unit_cases; suite && c->name; c++, index++) {
        if (!selected(sel, index, c->name))
            continue;
        CU_add_test(suite, c->name, c->fn);
        if (CU_get_error() != CUE_SUCCESS) {
            fprintf(stderr, "cannot register %s: duplicate or invalid\n", c->name);
            CU_cleanup_registry();
            return 2;
        }
        added++;
    }
    if (!suite || added == 0) {
        fprintf(stderr, "no test case registered\n");
        CU_cleanup_registry();
        return 2;
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned bad = CU_get_number_of_failure_records();
    CU_cleanup_registry();
    return bad ? 1 : 0;
}
