/* err: the error codes every support, fixture and suite function returns.
 *
 * The curl model: a function returns an err_code and, on failure, writes a
 * one-line human message into a caller-owned buffer of ERR_BUFSZ bytes.
 * The code says what kind of failure it was (callers branch on it); the
 * buffer says what exactly went wrong (humans read it). Messages never hold
 * a secret value: they name variables and files, never their contents.
 *
 *   char err[ERR_BUFSZ];
 *   err_code rc = state_load(path, &st, err);
 *   if (rc != ERR_OK) fprintf(stderr, "%s: %s\n", err_str(rc), err);
 */
#ifndef SMOKE_ERR_H
#define SMOKE_ERR_H

#include <stddef.h>

#define ERR_BUFSZ 512

typedef enum err_code {
    ERR_OK = 0,
    ERR_USAGE,      /* the caller passed something invalid */
    ERR_NOMEM,      /* allocation failed */
    ERR_IO,         /* a file or folder could not be read or written */
    ERR_CORRUPT,    /* data exists but cannot be understood (state, JSON) */
    ERR_NOTFOUND,   /* the thing asked for does not exist */
    ERR_CONFIG,     /* a required setting is missing or invalid */
    ERR_PRODUCTION, /* a production endpoint was refused */
    ERR_TIMEOUT,    /* a deadline passed */
    ERR_NETWORK,    /* could not connect, or the connection broke */
    ERR_HTTP,       /* the server answered with an error status */
    ERR_PROTOCOL,   /* the peer answered something we cannot use */
    ERR_PROCESS,    /* a child process could not run or failed */
    ERR_WRONG_STATE, /* the operation does not fit the current run state */
    ERR_FULL,       /* a fixed-size table is full */
    ERR_CLOSED,     /* the peer closed for good; no retry will help */
    ERR_INTERRUPTED, /* a signal (SIGINT, SIGTERM, SIGHUP) asked us to stop */
    ERR__COUNT
} err_code;

/* Short fixed text for a code ("timeout", "corrupt data", ...). Never NULL. */
const char *err_str(err_code code);

/* Formats a message into buf (ERR_BUFSZ bytes; NULL allowed, then ignored)
 * and returns code, so failures read as `return err_set(err, ERR_IO, ...)`. */
err_code err_set(char *buf, err_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes an existing message in buf with more context ("loading X: ..."). */
err_code err_wrap(char *buf, err_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
