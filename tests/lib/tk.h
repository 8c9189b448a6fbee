/* tk: the test kit shared by unit tests, fakes' tests and the rehearsal.
 * Files and folders here; each area adds its own tk_*.h beside this one.
 * Every function aborts the process (abort()) on an unexpected system
 * failure: a test that cannot make its temp folder has nothing to report. */
#ifndef SMOKE_TK_H
#define SMOKE_TK_H

#include <stddef.h>

/* A fresh folder under $TMPDIR (or /tmp): "<tmp>/band-smoke-<tag>-XXXXXX".
 * Returns a malloc'd path. */
char *tk_tmpdir(const char *tag);

/* rm -rf of a folder this test made (refuses "/" and paths outside tmp). */
void tk_rmtree(const char *path);

/* Whole file into a malloc'd NUL-terminated buffer (*len may be NULL);
 * NULL when it does not exist. */
char *tk_read(const char *path, size_t *len);

/* Writes text to path (0600), replacing it. */
void tk_write(const char *path, const char *text);

/* "dir/name" into a malloc'd string. */
char *tk_path(const char *dir, const char *name);

/* A whole decimal number within [lo, hi] from a command-line argument:
 * 1 with *out set, 0 when text is NULL, not a number, or out of range. */
int tk_parse_int(const char *text, int lo, int hi, int *out);

/* Path of a built test binary: $SMOKE_TEST_BIN/name (or the build default). */
char *tk_bin(const char *name);

#endif
