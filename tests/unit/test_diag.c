/* diag: the diagnostics a failed phase keeps, against the fake sbx.
 *
 * The file holds the reason, the end of the current generation's agent.log
 * and `sbx policy log <sandbox>`; everything redacted (a key in the log, in
 * the reason, a header line); no environment; 0600; a part that cannot be
 * read is said, not fatal; a phase name that is not a plain word is
 * refused before anything is written.
 */
#include "diag.h"
#include "redact.h"
#include "tk.h"
#include "tk_sbx.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CANARY "canary-diag-key-7f3e1a9c5b"

/* agent.log: an earlier generation's 20 lines, then 200 of this one (one
 * of them with the key, one a header line); *offset = where this one starts. */
static char *write_log(const char *dir, long *offset)
{
    char *path = tk_path(dir, "agent.log");
    FILE *f = fopen(path, "w");
    if (!f)
        abort();
    for (int i = 0; i < 20; i++)
        fprintf(f, "old generation line %d\n", i);
    *offset = ftell(f);
    for (int i = 0; i < 200; i++) {
        if (i == 190)
            fprintf(f, "INFO band.agent: using key %s\n", CANARY);
        else if (i == 191)
            fprintf(f, "DEBUG httpx: X-API-Key: %s\n", CANARY);
        else
            fprintf(f, "INFO band.agent: generation line %03d\n", i);
    }
    fclose(f);
    return path;
}

static char *read_kept(const char *dir, const char *name, mode_t *mode)
{
    char *path = tk_path(dir, name);
    struct stat sb;
    *mode = stat(path, &sb) == 0 ? sb.st_mode & 07777 : 0;
    char *text = tk_read(path, NULL);
    free(path);
    return text;
}

static void test_kept_redacted_with_log_tail_and_policy_log(void)
{
    redact_clear();
    UNIT_CHECK(redact_add_secret(CANARY) == ERR_OK, "canary");
    tk_sbx w;
    tk_sbx_setup(&w, "balanced");
    sbx_ctx sbx;
    tk_sbx_ctx(&w, &sbx, 15000);
    char err[ERR_BUFSZ], name[DIAG_NAME_SZ];
    UNIT_CHECK(sbx_create(&sbx, "box", w.workspace, err) == ERR_OK, "create: %s", err);
    char *dir = tk_tmpdir("diag");
    long offset = 0;
    char *log = write_log(dir, &offset);
    diag_spec spec = {dir, "launch", "no readiness line within 120 s; key " CANARY, log, offset,
                      &sbx, "box", 1764669600000};
    err_code rc = diag_write(&spec, name, err);
    UNIT_CHECK(rc == ERR_OK && strcmp(name, "diagnostics.launch.txt") == 0, "write: %s %s",
               err_str(rc), err);
    mode_t mode;
    char *text = read_kept(dir, "diagnostics.launch.txt", &mode);
    if (UNIT_CHECK(text != NULL, "no file")) {
        UNIT_CHECK(mode == 0600, "mode %o", (unsigned)mode);
        UNIT_CHECK(strstr(text, "failure: no readiness line within 120 s"), "the reason");
        UNIT_CHECK(strstr(text, "generation line 199\n") && !strstr(text, "line 100\n") &&
                       !strstr(text, "old generation"),
                   "the last %d lines of this generation only", DIAG_LOG_LINES);
        UNIT_CHECK(strstr(text, "(earlier lines left out)"), "says it left lines out");
        UNIT_CHECK(strstr(text, "== sbx policy log box ==\nBlocked requests:") &&
                       strstr(text, "Allowed requests:"),
                   "the policy log:\n%s", text);
        UNIT_CHECK(!strstr(text, CANARY) && strstr(text, REDACT_MASK), "redacted");
        UNIT_CHECK(!strstr(text, "PATH=") && !strstr(text, "FAKE_SBX_STATE") &&
                       !strstr(text, w.state),
                   "no environment");
    }
    free(text);
    /* a second failure of the phase replaces the file */
    spec.reason = "second failure";
    UNIT_CHECK(diag_write(&spec, name, err) == ERR_OK, "again: %s", err);
    text = read_kept(dir, "diagnostics.launch.txt", &mode);
    UNIT_CHECK(text && strstr(text, "failure: second failure") && !strstr(text, "120 s"),
               "replaced");
    free(text);
    free(log);
    tk_rmtree(dir);
    free(dir);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
    redact_clear();
}

/* No agent.log, a sandbox sbx does not know, no sbx at all: each part says
 * why, and the file is kept all the same. */
static void test_missing_parts_are_said(void)
{
    tk_sbx w;
    tk_sbx_setup(&w, "balanced");
    sbx_ctx sbx;
    tk_sbx_ctx(&w, &sbx, 15000);
    char *dir = tk_tmpdir("diag");
    char *missing = tk_path(dir, "agent.log");
    char err[ERR_BUFSZ], name[DIAG_NAME_SZ];
    diag_spec spec = {dir, "daemon-restart", NULL, missing, 0, &sbx, "ghost", 0};
    UNIT_CHECK(diag_write(&spec, name, err) == ERR_OK, "write: %s", err);
    mode_t mode;
    char *text = read_kept(dir, "diagnostics.daemon-restart.txt", &mode);
    UNIT_CHECK(text && strstr(text, "failure: (no reason given)") &&
                   strstr(text, "agent.log cannot be read") &&
                   strstr(text, "== sbx policy log ghost ==\n"),
               "each part says why:\n%s", text ? text : "");
    free(text);
    spec.sbx = NULL;
    spec.agent_log = NULL;
    UNIT_CHECK(diag_write(&spec, name, err) == ERR_OK, "write: %s", err);
    text = read_kept(dir, "diagnostics.daemon-restart.txt", &mode);
    UNIT_CHECK(text && strstr(text, "no agent.log for this run") &&
                   strstr(text, "nothing to ask sbx"),
               "without log and sbx:\n%s", text ? text : "");
    free(text);
    free(missing);
    tk_rmtree(dir);
    free(dir);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
}

static void test_refuses_a_name_that_is_not_a_word(void)
{
    char *dir = tk_tmpdir("diag");
    char err[ERR_BUFSZ], name[DIAG_NAME_SZ] = "x";
    const char *bad[] = {"../state", "a/b", "", "Launch", NULL};
    for (int i = 0; bad[i]; i++) {
        diag_spec spec = {dir, bad[i], "r", NULL, 0, NULL, NULL, 0};
        UNIT_CHECK(diag_write(&spec, name, err) == ERR_USAGE && name[0] == '\0',
                   "phase name \"%s\" accepted", bad[i]);
    }
    char *listing = tk_path(dir, "diagnostics...-state.txt");
    struct stat sb;
    UNIT_CHECK(stat(listing, &sb) != 0, "a file was written");
    free(listing);
    tk_rmtree(dir);
    free(dir);
}

const unit_case unit_cases[] = {
    {"kept_redacted_with_log_tail_and_policy_log",
     test_kept_redacted_with_log_tail_and_policy_log},
    {"missing_parts_are_said", test_missing_parts_are_said},
    {"refuses_a_name_that_is_not_a_word", test_refuses_a_name_that_is_not_a_word},
    {NULL, NULL},
};
