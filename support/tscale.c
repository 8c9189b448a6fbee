#include "tscale.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

err_code tscale_parse(const char *text, double *out, char *err)
{
    if (!text || !*text)
        return err_set(err, ERR_CONFIG, "%s is empty", TSCALE_ENV);
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(v) || v <= 0.0 || v > 1.0)
        return err_set(err, ERR_CONFIG, "%s must be a decimal in (0, 1], not '%.32s'",
                       TSCALE_ENV, text);
    *out = v;
    return ERR_OK;
}

double tscale_factor(void)
{
    const char *text = getenv(TSCALE_ENV);
    double v = 1.0;
    if (text && *text && tscale_parse(text, &v, NULL) != ERR_OK)
        v = 1.0;
    return v;
}

int64_t tscale_apply(int64_t real_ms, double factor)
{
    if (real_ms <= 0)
        return real_ms;
    double scaled = (double)real_ms * factor;
    if (scaled < 1.0)
        return 1;
    return (int64_t)(scaled + 0.5);
}

int64_t tscale_ms(int64_t real_ms)
{
    return tscale_apply(real_ms, tscale_factor());
}
