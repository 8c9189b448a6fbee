#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const names[ERR__COUNT] = {
    [ERR_OK] = "ok",
    [ERR_USAGE] = "invalid usage",
    [ERR_NOMEM] = "out of memory",
    [ERR_IO] = "i/o error",
    [ERR_CORRUPT] = "corrupt data",
    [ERR_NOTFOUND] = "not found",
    [ERR_CONFIG] = "configuration error",
    [ERR_PRODUCTION] = "production endpoint refused",
    [ERR_TIMEOUT] = "timeout",
    [ERR_NETWORK] = "network error",
    [ERR_HTTP] = "http error",
    [ERR_PROTOCOL] = "protocol error",
    [ERR_PROCESS] = "process error",
    [ERR_WRONG_STATE] = "wrong run state",
    [ERR_FULL] = "table full",
    [ERR_CLOSED] = "closed for good",
    [ERR_INTERRUPTED] = "interrupted",
};

const char *err_str(err_code code)
{
    if ((int)code < 0 || code >= ERR__COUNT || !names[code])
        return "unknown error";
    return names[code];
}

err_code err_set(char *buf, err_code code, const char *fmt, ...)
{
    if (buf) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, ERR_BUFSZ, fmt, ap);
        va_end(ap);
    }
    return code;
}

err_code err_wrap(char *buf, err_code code, const char *fmt, ...)
{
    if (!buf)
        return code;
    char old[ERR_BUFSZ];
    memcpy(old, buf, ERR_BUFSZ);
    old[ERR_BUFSZ - 1] = '\0';
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, ERR_BUFSZ, fmt, ap);
    va_end(ap);
    size_t used = n < 0 ? 0 : (size_t)n < ERR_BUFSZ ? (size_t)n : ERR_BUFSZ - 1;
    size_t room = ERR_BUFSZ - used;
    if (room > 1) {
        /* "prefix" + ": " + old, cut to fit */
        size_t sep = room - 1 < 2 ? room - 1 : 2;
        memcpy(buf + used, ": ", sep);
        used += sep;
        size_t take = strlen(old);
        if (take > ERR_BUFSZ - 1 - used)
            take = ERR_BUFSZ - 1 - used;
        memcpy(buf + used, old, take);
        buf[used + take] = '\0';
    }
    return code;
}
