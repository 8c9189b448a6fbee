#include "url.h"

int url_parse_port(const char *p, size_t n, int *out)
{
    if (!p || n == 0 || n > 5)
        return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    if (v < 1 || v > 65535)
        return -1;
    *out = v;
    return 0;
}
