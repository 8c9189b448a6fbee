#include "tk.h"

#include <errno.h>
#include <stdlib.h>

int tk_parse_int(const char *text, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = text ? strtol(text, &end, 10) : 0;
    if (!text || errno || end == text || *end || v < lo || v > hi)
        return 0;
    *out = (int)v;
    return 1;
}
