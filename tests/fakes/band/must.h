/* must: allocation that cannot fail quietly.
 *
 * The fake aborts when memory runs out rather than threading ERR_NOMEM
 * through every handler: a test double that cannot allocate has nothing
 * useful left to report, and a half-built answer would mislead the test.
 */
#ifndef FAKE_BAND_MUST_H
#define FAKE_BAND_MUST_H

#include <stddef.h>

void *must_calloc(size_t n, size_t size);
char *must_strdup(const char *s);

/* NULL stays NULL. */
char *must_strdup_or_null(const char *s);

#endif
