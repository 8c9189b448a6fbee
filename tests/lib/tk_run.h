/* tk_run: run a built program as a test would from a shell, but without
 * one: argv, extra environment, merged stdout+stderr captured, a deadline. */
#ifndef SMOKE_TK_RUN_H
#define SMOKE_TK_RUN_H

typedef struct tk_result {
    int status;    /* exit code; 128 + signal when killed; -1 timeout */
    char *output;  /* stdout and stderr, merged; malloc'd */
} tk_result;

/* Runs argv[0] (a path) with the parent's environment plus `env` entries
 * ("K=V", or "K=" to unset K; NULL-terminated, may be NULL). Kills it and
 * returns status -1 after timeout_ms. */
void tk_run(char *const argv[], char *const env[], int timeout_ms, tk_result *out);
void tk_result_free(tk_result *r);

/* The band-smoke under test ($BAND_SMOKE, which ctest sets, else the
 * build's) run with up to three arguments (NULL ends them) and `env`, for
 * at most 60 s. Returns the exit status (also in out->status). */
int tk_smoke(char *const env[], tk_result *out, const char *a, const char *b, const char *c);

#endif
