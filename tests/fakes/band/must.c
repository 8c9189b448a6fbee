#include "must.h"

#include <stdlib.h>
#include <string.h>

void *must_calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        abort();
    return p;
}

char *must_strdup(const char *s)
{
    char *d = strdup(s);
    if (!d)
        abort();
    return d;
}

char *must_strdup_or_null(const char *s)
{
    return s ? must_strdup(s) : NULL;
}
