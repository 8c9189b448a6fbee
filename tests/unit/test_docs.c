/* docs: every command README.md and skill/SKILL.md tell people to type
 * exists. From their code spans and blocks: each `band-smoke SUBCOMMAND
 * [--flag]` is in band-smoke's usage (rehearse flags in the rehearsal's),
 * each `ctest ... -R REGEX` selects exactly the phase tests it means (by
 * `ctest -N` on the build's tests), each script is there and executable,
 * and SKILL.md gives the one-step command of every one of the 13 phases. */
#include "tk.h"
#include "tk_run.h"
#include "unit.h"

#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NPHASES 13
#define MAX_SPANS 1024

/* The code of a Markdown file: inline `spans` and fenced blocks, each one
 * string (malloc'd), NULL-terminated. */
static char **code_of(const char *path)
{
    char *md = tk_read(path, NULL);
    char **spans = calloc(MAX_SPANS + 1, sizeof *spans);
    int n = 0;
    for (const char *p = md; p && *p && n < MAX_SPANS;) {
        if (!strncmp(p, "```", 3)) {
            const char *body = strchr(p, '\n');
            const char *end = body ? strstr(body, "```") : NULL; /* fences may be indented */
            if (!end)
                break;
            spans[n++] = strndup(body + 1, (size_t)(end - body - 1));
            p = end + 3;
        } else if (*p == '`') {
            const char *end = strchr(p + 1, '`');
            if (!end)
                break;
            spans[n++] = strndup(p + 1, (size_t)(end - p - 1));
            p = end + 1;
        } else {
            p++;
        }
    }
    free(md);
    return spans;
}

static void free_spans(char **spans)
{
    for (int i = 0; spans[i]; i++)
        free(spans[i]);
    free(spans);
}

/* The next shell word at *p ('quoted' words unquoted), or 0 at the end. */
static int next_word(const char **p, char *word, size_t cap)
{
    const char *s = *p;
    while (*s == ' ' || *s == '\t' || *s == '\n')
        s++;
    if (!*s)
        return 0;
    size_t n = 0;
    if (*s == '\'') {
        for (s++; *s && *s != '\''; s++)
            if (n + 1 < cap)
                word[n++] = *s;
        if (*s)
            s++;
    } else {
        for (; *s && *s != ' ' && *s != '\t' && *s != '\n'; s++)
            if (n + 1 < cap)
                word[n++] = *s;
    }
    word[n] = '\0';
    *p = s;
    return 1;
}

static char *run_text(char *const argv[])
{
    tk_result res;
    tk_run(argv, NULL, 30000, &res);
    return res.output; /* the caller frees */
}

typedef struct tools {
    char band_smoke[1024];
    char rehearsal[1100];
    char ctest[1100];
    char *usage;           /* band-smoke help */
    char *rehearsal_usage; /* band-smoke-rehearsal with a bad flag */
    char *tests_dir;       /* includes the build's tests: only the phases are listed */
} tools;

/* ctest sits beside the cmake that configured the build. */
static void find_ctest(char *out, size_t cap)
{
    char *cache = tk_read(SMOKE_BINARY_DIR "/CMakeCache.txt", NULL);
    const char *line = cache ? strstr(cache, "\nCMAKE_COMMAND:INTERNAL=") : NULL;
    out[0] = '\0';
    if (line) {
        line += strlen("\nCMAKE_COMMAND:INTERNAL=");
        char cmake[1024];
        snprintf(cmake, sizeof cmake, "%.*s", (int)strcspn(line, "\n"), line);
        snprintf(out, cap, "%s/ctest", dirname(cmake));
    }
    free(cache);
}

static void open_tools(tools *t)
{
    memset(t, 0, sizeof *t);
    const char *bs = getenv("BAND_SMOKE");
    snprintf(t->band_smoke, sizeof t->band_smoke, "%s",
             bs ? bs : SMOKE_BINARY_DIR "/band-smoke");
    snprintf(t->rehearsal, sizeof t->rehearsal, "%s-rehearsal", t->band_smoke);
    find_ctest(t->ctest, sizeof t->ctest);
    char *help[] = {t->band_smoke, "help", NULL};
    t->usage = run_text(help);
    char *bad[] = {t->rehearsal, "--no-such-flag", NULL};
    t->rehearsal_usage = run_text(bad);
    /* ctest -N writes Testing/Temporary/LastTest.log where it runs: never
     * in the build folder, whose ctest may be running this very test. */
    t->tests_dir = tk_tmpdir("docs");
    char *file = tk_path(t->tests_dir, "CTestTestfile.cmake");
    tk_write(file, "include(\"" SMOKE_BINARY_DIR "/CTestTestfile.cmake\")\n");
    free(file);
}

static void close_tools(tools *t)
{
    free(t->usage);
    free(t->rehearsal_usage);
    tk_rmtree(t->tests_dir);
    free(t->tests_dir);
}

/* The usage line of `sub`: "  sub ..." at a line start; NULL if none. */
static const char *usage_line(const char *usage, const char *sub)
{
    char head[96];
    snprintf(head, sizeof head, "\n  %s ", sub);
    const char *at = usage ? strstr(usage, head) : NULL;
    if (!at) {
        snprintf(head, sizeof head, "\n  %s\n", sub);
        at = usage ? strstr(usage, head) : NULL;
    }
    return at ? at + 1 : NULL;
}

static int line_has(const char *line, const char *word)
{
    size_t len = strcspn(line, "\n");
    const char *hit = strstr(line, word);
    return hit && (size_t)(hit - line) < len;
}

/* `band-smoke SUB [--flag ...]` in one span; counts each command checked. */
static int check_band_smoke(const tools *t, const char *doc, const char *span)
{
    int found = 0;
    for (const char *p = span; (p = strstr(p, "band-smoke")) != NULL; p += 10) {
        const char *after = p + 10;
        if (*after != ' ' || (p > span && p[-1] != ' ' && p[-1] != '/' && p[-1] != '\n'))
            continue;
        char sub[64], word[128];
        const char *rest = after;
        if (!next_word(&rest, sub, sizeof sub))
            continue;
        found++;
        const char *line = usage_line(t->usage, sub);
        if (!UNIT_CHECK(line != NULL, "%s names `band-smoke %s`, which band-smoke's usage "
                        "does not list", doc, sub))
            continue;
        while (next_word(&rest, word, sizeof word) && strcmp(word, "&&") && strcmp(word, "|")) {
            if (strncmp(word, "--", 2) != 0)
                continue;
            int known = line_has(line, word) ||
                        (!strcmp(sub, "rehearse") && t->rehearsal_usage &&
                         strstr(t->rehearsal_usage, word));
            UNIT_CHECK(known, "%s: `band-smoke %s %s`: the flag is not in the usage", doc, sub,
                       word);
        }
    }
    return found;
}

/* The test names `ctest -N -R regex` selects, one per line (malloc'd). */
static char *selected(const tools *t, const char *regex)
{
    char *argv[] = {(char *)t->ctest, "--test-dir", t->tests_dir, "-N", "-R", (char *)regex,
                    NULL};
    char *out = run_text(argv);
    size_t cap = strlen(out) + 1, n = 0;
    char *names = calloc(1, cap);
    for (char *save = NULL, *line = strtok_r(out, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        char *name = strstr(line, "Test ");
        name = name && strchr(name, '#') ? strstr(name, ": ") : NULL;
        if (name)
            n += (size_t)snprintf(names + n, cap - n, "%s\n", name + 2);
    }
    free(out);
    return names;
}

static int count_lines(const char *text)
{
    int n = 0;
    for (; text && *text; text++)
        n += *text == '\n';
    return n;
}

/* What a regex from the docs means: "phase" = all thirteen phases;
 * '^phase\.05\.initial$' = exactly that phase. */
static void check_regex(const tools *t, const char *doc, const char *regex, int *single)
{
    char *names = selected(t, regex);
    size_t len = strlen(regex);
    if (regex[0] == '^' && len > 2 && regex[len - 1] == '$') {
        char want[128];
        size_t n = 0;
        for (size_t i = 1; i + 1 < len && n + 2 < sizeof want; i++)
            if (regex[i] != '\\')
                want[n++] = regex[i];
        want[n++] = '\n';
        want[n] = '\0';
        if (UNIT_CHECK(!strcmp(names, want), "%s: -R '%s' selects [%s], expected exactly %s",
                       doc, regex, names, want))
            (*single)++;
    } else {
        UNIT_CHECK(!strcmp(regex, "phase"), "%s: -R '%s' is neither `phase` nor one anchored "
                   "phase", doc, regex);
        UNIT_CHECK(count_lines(names) == NPHASES, "%s: -R '%s' selects %d tests, expected the "
                   "%d phases:\n%s", doc, regex, count_lines(names), NPHASES, names);
        for (const char *p = names; *p; p = strchr(p, '\n') + 1)
            UNIT_CHECK(!strncmp(p, "phase.", 6), "%s: -R phase selects a non-phase: %.60s",
                       doc, p);
    }
    free(names);
}

static int check_ctest(const tools *t, const char *doc, const char *span, int *single)
{
    int found = 0;
    for (const char *p = span; (p = strstr(p, "ctest ")) != NULL; p += 6) {
        if (p > span && p[-1] != ' ' && p[-1] != '\n')
            continue;
        const char *rest = p + 6;
        char word[256];
        while (next_word(&rest, word, sizeof word) && strcmp(word, "&&")) {
            if (strcmp(word, "-R") != 0 || !next_word(&rest, word, sizeof word))
                continue;
            found++;
            check_regex(t, doc, word, single);
        }
    }
    return found;
}

/* scripts/NAME and .ci/run: present and executable. */
static int check_scripts(const char *doc, const char *span)
{
    int found = 0;
    static const char *const dirs[] = {"scripts/", ".ci/", NULL};
    for (int d = 0; dirs[d]; d++) {
        for (const char *p = span; (p = strstr(p, dirs[d])) != NULL; p++) {
            if (p > span && p[-1] != ' ' && p[-1] != '\n' && p[-1] != '(')
                continue;
            char rel[256], path[1400];
            snprintf(rel, sizeof rel, "%.*s", (int)strcspn(p, " \n),;`"), p);
            snprintf(path, sizeof path, "%s/%s", SMOKE_SOURCE_DIR, rel);
            found++;
            UNIT_CHECK(access(path, X_OK) == 0, "%s names %s, which is not an executable file",
                       doc, rel);
        }
    }
    return found;
}

typedef struct tally {
    int band_smoke, regexes, single, scripts;
} tally;

static tally check_doc(const tools *t, const char *rel)
{
    tally n = {0};
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", SMOKE_SOURCE_DIR, rel);
    char **spans = code_of(path);
    for (int i = 0; spans[i]; i++) {
        n.band_smoke += check_band_smoke(t, rel, spans[i]);
        n.regexes += check_ctest(t, rel, spans[i], &n.single);
        n.scripts += check_scripts(rel, spans[i]);
    }
    free_spans(spans);
    return n;
}

static void test_tools_found(void)
{
    tools t;
    open_tools(&t);
    UNIT_CHECK(usage_line(t.usage, "status") != NULL, "band-smoke help: %s", t.usage);
    UNIT_CHECK(t.rehearsal_usage && strstr(t.rehearsal_usage, "--via"), "rehearsal usage: %s",
               t.rehearsal_usage);
    char *all = selected(&t, "phase");
    UNIT_CHECK(count_lines(all) == NPHASES, "ctest (%s) lists %d phases", t.ctest,
               count_lines(all));
    free(all);
    close_tools(&t);
}

static void test_readme_commands_exist(void)
{
    tools t;
    open_tools(&t);
    tally n = check_doc(&t, "README.md");
    UNIT_CHECK(n.band_smoke >= 8, "README.md: only %d band-smoke commands found", n.band_smoke);
    UNIT_CHECK(n.regexes >= 3, "README.md: only %d ctest -R commands found", n.regexes);
    UNIT_CHECK(n.scripts >= 5, "README.md: only %d scripts found", n.scripts);
    close_tools(&t);
}

static void test_skill_commands_exist(void)
{
    tools t;
    open_tools(&t);
    tally n = check_doc(&t, "skill/SKILL.md");
    UNIT_CHECK(n.band_smoke >= 6, "SKILL.md: only %d band-smoke commands found", n.band_smoke);
    UNIT_CHECK(n.single >= NPHASES, "SKILL.md: %d valid one-step commands, expected one per "
               "phase (%d)", n.single, NPHASES);
    close_tools(&t);
}

/* Every phase has its own one-step command in SKILL.md, in run order. */
static void test_skill_covers_every_phase(void)
{
    char path[1400];
    snprintf(path, sizeof path, "%s/skill/SKILL.md", SMOKE_SOURCE_DIR);
    char *md = tk_read(path, NULL);
    tools t;
    open_tools(&t);
    char *names = selected(&t, "phase");
    const char *last = md;
    for (char *save = NULL, *name = strtok_r(names, "\n", &save); name;
         name = strtok_r(NULL, "\n", &save)) {
        char cmd[256], escaped[96];
        size_t n = 0;
        for (const char *s = name; *s && n + 2 < sizeof escaped; s++) {
            if (*s == '.')
                escaped[n++] = '\\';
            escaped[n++] = *s;
        }
        escaped[n] = '\0';
        snprintf(cmd, sizeof cmd, "ctest --test-dir build -R '^%s$' --output-on-failure",
                 escaped);
        const char *at = md ? strstr(last, cmd) : NULL;
        if (UNIT_CHECK(at != NULL, "SKILL.md has no `%s` after the previous step", cmd))
            last = at;
    }
    free(names);
    free(md);
    close_tools(&t);
}

/* The checker itself: a wrong regex, an unknown subcommand and a missing
 * script are each caught (so a pass above means something). */
static void test_checker_catches_mistakes(void)
{
    tools t;
    open_tools(&t);
    char *two = selected(&t, "^phase\\.0[12]");
    UNIT_CHECK(count_lines(two) == 2, "-R ^phase\\.0[12] selects %d", count_lines(two));
    free(two);
    char *none = selected(&t, "^phase\\.05\\.initail$");
    UNIT_CHECK(count_lines(none) == 0, "a misspelt phase selects: %s", none);
    free(none);
    UNIT_CHECK(usage_line(t.usage, "statsu") == NULL, "an unknown subcommand is listed");
    UNIT_CHECK(usage_line(t.usage, "watch") && line_has(usage_line(t.usage, "watch"),
                                                        "--timeout"),
               "watch --timeout is not in the usage");
    char path[1400];
    snprintf(path, sizeof path, "%s/scripts/no-such.sh", SMOKE_SOURCE_DIR);
    UNIT_CHECK(access(path, X_OK) != 0, "a missing script is found");
    close_tools(&t);
}

const unit_case unit_cases[] = {
    {"tools_found", test_tools_found},
    {"readme_commands_exist", test_readme_commands_exist},
    {"skill_commands_exist", test_skill_commands_exist},
    {"skill_covers_every_phase", test_skill_covers_every_phase},
    {"checker_catches_mistakes", test_checker_catches_mistakes},
    {NULL, NULL},
};
