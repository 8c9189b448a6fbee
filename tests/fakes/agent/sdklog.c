#include "sdklog.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "agentlog.h"
#include "clock.h"
#include "err.h"

/* Long enough for a quoted message content in a failure line; longer
 * messages are cut, which a log line may be. */
#define LINE_SZ 4096

static void emit(const char *level, const char *logger, const char *fmt, va_list ap)
{
    char message[LINE_SZ];
    char err[ERR_BUFSZ];
    vsnprintf(message, sizeof message, fmt, ap);
    /* nowhere left to report a failing stderr */
    (void)agentlog_note(STDERR_FILENO, clock_wall_ms(NULL), level, logger, message, err);
}

void sdklog_info(const char *logger, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit("INFO", logger, fmt, ap);
    va_end(ap);
}

void sdklog_warning(const char *logger, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit("WARNING", logger, fmt, ap);
    va_end(ap);
}

void sdklog_error(const char *logger, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit("ERROR", logger, fmt, ap);
    va_end(ap);
}

const char *sdklog_bool(int value)
{
    return value ? "True" : "False";
}
