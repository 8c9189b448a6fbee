#include "agentlog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "redact.h"
#include "utf8.h"

/* A line longer than this is judged by its head alone: timestamp, level,
 * logger and the start of the message, where every pattern sits, fit. */
#define SCAN_LINE_SZ 4096
/* Python's asctime: "2026-08-12 10:59:30,109" */
#define ASCTIME_LEN 23
#define ASCTIME_SZ 32

/* ---- patterns ---------------------------------------------------------- */

void agentlog_patterns_default(agentlog_patterns *p)
{
    snprintf(p->ready, sizeof p->ready, "%s", "Agent started:");
    snprintf(p->disconnect, sizeof p->disconnect, "%s", "WebSocket disconnected");
    snprintf(p->reconnect, sizeof p->reconnect, "%s", "WebSocket reconnected");
}

static err_code pattern_from_env(const char *name, char *pattern, char *err)
{
    const char *value = getenv(name);
    if (!value || !*value)
        return ERR_OK;
    size_t len = strlen(value);
    if (len >= AGENTLOG_PATTERN_SZ)
        return err_set(err, ERR_CONFIG, "%s is longer than %d bytes", name,
                       AGENTLOG_PATTERN_SZ - 1);
    memcpy(pattern, value, len + 1);
    return ERR_OK;
}

err_code agentlog_patterns_from_env(agentlog_patterns *p, char *err)
{
    agentlog_patterns_default(p);
    err_code rc = pattern_from_env("SMOKE_LOG_READY", p->ready, err);
    if (rc == ERR_OK)
        rc = pattern_from_env("SMOKE_LOG_DISCONNECT", p->disconnect, err);
    if (rc == ERR_OK)
        rc = pattern_from_env("SMOKE_LOG_RECONNECT", p->reconnect, err);
    return rc;
}

/* ---- one line ---------------------------------------------------------- */

/* A line split along the SDK's format. `message` is NULL when the text
 * after the timestamp is not "<level> <logger>: <message>". */
typedef struct log_line {
    int64_t at_ms;
    const char *body; /* everything after the timestamp */
    const char *logger;
    size_t logger_len;
    const char *message;
} log_line;

/* 1 when `text` starts with a timestamp this module can trust. */
static int parse_line(const char *text, log_line *out)
{
    char stamp[ASCTIME_LEN + 1];
    if (strnlen(text, ASCTIME_LEN + 1) <= ASCTIME_LEN || text[ASCTIME_LEN] != ' ')
        return 0;
    memcpy(stamp, text, ASCTIME_LEN);
    stamp[ASCTIME_LEN] = '\0';
    if (clock_parse_iso(stamp, &out->at_ms) != ERR_OK)
        return 0;
    out->body = text + ASCTIME_LEN + 1;
    out->logger = NULL;
    out->logger_len = 0;
    out->message = NULL;
    const char *level_end = strchr(out->body, ' ');
    const char *colon = level_end ? strstr(level_end + 1, ": ") : NULL;
    if (colon) {
        out->logger = level_end + 1;
        out->logger_len = (size_t)(colon - out->logger);
        if (out->logger_len > 0 && !memchr(out->logger, ' ', out->logger_len))
            out->message = colon + 2;
    }
    return 1;
}

/* An empty pattern would match every line; it matches none instead. */
static int contains(const char *text, const char *pattern)
{
    return pattern[0] != '\0' && strstr(text, pattern) != NULL;
}

static int is_launcher_note(const log_line *line)
{
    size_t n = strlen(AGENTLOG_LAUNCHER);
    return line->message && line->logger_len == n &&
           memcmp(line->logger, AGENTLOG_LAUNCHER, n) == 0;
}

static int is_exit_note(const log_line *line)
{
    return is_launcher_note(line) && strstr(line->message, AGENTLOG_EXIT_NOTE) != NULL;
}

static void record(agentlog_event *ev, const log_line *line, int64_t offset,
                   const char *text)
{
    char masked[AGENTLOG_LINE_SZ];
    ev->at_ms = line->at_ms;
    ev->offset = offset;
    /* masked before made valid UTF-8: the line goes on into the state */
    redact_into(text, masked, sizeof masked);
    utf8_sanitize(masked, ev->line, sizeof ev->line);
}

/* What one scan asks, for judge_line. */
typedef struct scan_job {
    int64_t after_ms;
    const agentlog_patterns *p;
    const char *launcher_id; /* NULL/"" = any launcher's exit note */
    agentlog_scan *out;
} scan_job;

static void judge_line(const char *text, int64_t offset, void *ud)
{
    const scan_job *job = ud;
    const agentlog_patterns *p = job->p;
    agentlog_scan *out = job->out;
    int64_t after_ms = job->after_ms;
    log_line line;
    if (!parse_line(text, &line))
        return;
    if (!out->ready.at_ms && contains(line.body, p->ready))
        record(&out->ready, &line, offset, text);
    if (is_exit_note(&line) &&
        (!job->launcher_id || !job->launcher_id[0] || strstr(line.message, job->launcher_id)))
        record(&out->exit, &line, offset, text);
    if (line.at_ms < after_ms)
        return;
    /* Reconnect is judged before this line can become the disconnect, so a
     * line matching both patterns is never its own recovery. */
    if (contains(line.body, p->reconnect)) {
        out->reconnects++;
        if (out->disconnect.at_ms && !out->reconnect.at_ms &&
            line.at_ms >= out->disconnect.at_ms)
            record(&out->reconnect, &line, offset, text);
    }
    if (contains(line.body, p->disconnect)) {
        out->disconnects++;
        if (!out->disconnect.at_ms)
            record(&out->disconnect, &line, offset, text);
    }
}

/* Reads one line into buf (newline and a trailing CR dropped), consuming the
 * whole line from fp even when only its head fits, but never more than
 * `limit` bytes. Returns the bytes consumed, 0 at end of file. */
static size_t read_line(FILE *fp, char *buf, size_t cap, int64_t limit)
{
    size_t used = 0, consumed = 0;
    int c;
    while ((int64_t)consumed < limit && (c = getc(fp)) != EOF) {
        consumed++;
        if (c == '\n')
            break;
        if (used + 1 < cap)
            buf[used++] = (char)c;
    }
    if (used > 0 && buf[used - 1] == '\r')
        used--;
    buf[used] = '\0';
    return consumed;
}

/* Opens agent.log for a scan: never through a symlink, never blocking on
 * a FIFO or device, a regular file only (a log pointing at /dev/zero
 * would never end). NULL with *missing set when there is no file. */
static FILE *open_log(const char *path, off_t *size, int *missing, char *err)
{
    *missing = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            *missing = 1;
        else if (errno == ELOOP)
            err_set(err, ERR_IO, "%s is a symbolic link; agent.log is never read through one", path);
        else
            err_set(err, ERR_IO, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat sb;
    FILE *fp = NULL;
    if (fstat(fd, &sb) != 0)
        err_set(err, ERR_IO, "cannot stat %s: %s", path, strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        err_set(err, ERR_IO, "%s is not a regular file (a FIFO or device is never scanned)", path);
    else if (!(fp = fdopen(fd, "rb")))
        err_set(err, ERR_IO, "cannot read %s: %s", path, strerror(errno));
    if (!fp)
        close(fd);
    else
        *size = sb.st_size;
    return fp;
}

typedef void (*line_fn)(const char *text, int64_t offset, void *ud);

/* Hands every line of `path` past from_offset to fn, within the bounds
 * agentlog_scan_file promises. */
static err_code walk_lines(const char *path, int64_t from_offset, line_fn fn, void *ud,
                           char *err)
{
    off_t size = 0;
    int missing;
    FILE *fp = open_log(path, &size, &missing, err);
    if (!fp)
        return missing ? ERR_OK : ERR_IO; /* missing: the agent has not written anything yet */
    if (fseeko(fp, (off_t)from_offset, SEEK_SET) != 0) {
        int e = errno;
        fclose(fp);
        return err_set(err, ERR_IO, "cannot seek in %s: %s", path, strerror(e));
    }
    /* Bounded twice: by the size the file had when opened (a writer that
     * never stops cannot keep us here) capped at AGENTLOG_SCAN_MAX_BYTES,
     * and by AGENTLOG_SCAN_MAX_MS of reading. */
    int64_t end = (int64_t)size;
    if (end - from_offset > AGENTLOG_SCAN_MAX_BYTES)
        end = from_offset + AGENTLOG_SCAN_MAX_BYTES;
    int64_t deadline = clock_mono_ms() + AGENTLOG_SCAN_MAX_MS;
    char text[SCAN_LINE_SZ];
    int64_t offset = from_offset;
    size_t consumed;
    err_code rc = ERR_OK;
    for (unsigned n = 1; offset < end && (consumed = read_line(fp, text, sizeof text, end - offset)) > 0; n++) {
        fn(text, offset, ud);
        offset += (int64_t)consumed;
        if (n % 1024 == 0 && clock_mono_ms() > deadline) {
            rc = err_set(err, ERR_TIMEOUT, "scanning %s took over %d ms (stopped at byte %lld)",
                         path, AGENTLOG_SCAN_MAX_MS, (long long)offset);
            break;
        }
    }
    int read_errno = ferror(fp) ? errno : 0;
    fclose(fp);
    if (rc == ERR_OK && read_errno)
        return err_set(err, ERR_IO, "cannot read %s: %s", path, strerror(read_errno));
    return rc;
}

static err_code scan(const char *path, int64_t from_offset, scan_job *job, char *err)
{
    if (!path || !job->p || !job->out || from_offset < 0)
        return err_set(err, ERR_USAGE, "agentlog_scan_file: missing argument or negative offset");
    memset(job->out, 0, sizeof *job->out);
    return walk_lines(path, from_offset, judge_line, job, err);
}

err_code agentlog_scan_launch(const char *path, int64_t from_offset, const char *launcher_id,
                              const agentlog_patterns *p, agentlog_scan *out, char *err)
{
    scan_job job = {0, p, launcher_id, out};
    return scan(path, from_offset, &job, err);
}

err_code agentlog_scan_file(const char *path, int64_t from_offset,
                            int64_t after_ms, const agentlog_patterns *p,
                            agentlog_scan *out, char *err)
{
    scan_job job = {after_ms, p, NULL, out};
    return scan(path, from_offset, &job, err);
}

/* ---- launcher identities ----------------------------------------------- */

void agentlog_launcher_id(long pid, uint64_t start_token, char *buf, size_t cap)
{
    snprintf(buf, cap, "launcher %ld@%llu)", pid, (unsigned long long)start_token);
}

typedef struct launcher_list {
    agentlog_launcher *v;
    size_t cap, n;
    int more;
} launcher_list;

/* "launcher PID@TOKEN)" anywhere in the message: 1 with both filled in. */
static int parse_launcher_id(const char *message, long *pid, uint64_t *token)
{
    for (const char *at = strstr(message, "launcher "); at; at = strstr(at + 1, "launcher ")) {
        long p;
        unsigned long long t;
        char close;
        if (sscanf(at, "launcher %ld@%llu%c", &p, &t, &close) == 3 && close == ')' && p > 1) {
            *pid = p;
            *token = (uint64_t)t;
            return 1;
        }
    }
    return 0;
}

static void list_launcher(const char *text, int64_t offset, void *ud)
{
    (void)offset;
    launcher_list *l = ud;
    log_line line;
    long pid;
    uint64_t token;
    if (!parse_line(text, &line) || !is_launcher_note(&line) ||
        !parse_launcher_id(line.message, &pid, &token))
        return;
    int ended = is_exit_note(&line);
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].pid == pid && l->v[i].start_token == token) {
            l->v[i].ended |= ended;
            return;
        }
    if (l->n == l->cap) {
        l->more = 1;
        return;
    }
    l->v[l->n++] = (agentlog_launcher){pid, token, ended};
}

err_code agentlog_launchers(const char *path, int64_t from_offset, agentlog_launcher *out,
                            size_t cap, size_t *n, int *more, char *err)
{
    if (!path || (!out && cap) || !n || !more || from_offset < 0)
        return err_set(err, ERR_USAGE, "agentlog_launchers: missing argument or negative offset");
    launcher_list l = {out, cap, 0, 0};
    err_code rc = walk_lines(path, from_offset, list_launcher, &l, err);
    *n = l.n;
    *more = l.more;
    return rc;
}

/* ---- writing a note ---------------------------------------------------- */

static int format_asctime(int64_t wall_ms, char *buf, size_t cap)
{
    int64_t secs = wall_ms / 1000, ms = wall_ms % 1000;
    if (ms < 0) { /* floor, so times before 1970 still read forwards */
        ms += 1000;
        secs--;
    }
    time_t t = (time_t)secs;
    struct tm tm;
    if (!gmtime_r(&t, &tm))
        return 0;
    size_t n = strftime(buf, cap, "%Y-%m-%d %H:%M:%S", &tm);
    return n > 0 && snprintf(buf + n, cap - n, ",%03d", (int)ms) == 4;
}

/* A message with a line break would split the note in two, and its second
 * half could pass for an SDK line (a forged "WebSocket reconnected"). */
static void flatten(char *text, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (text[i] == '\n' || text[i] == '\r')
            text[i] = ' ';
}

/* One write(2): on an O_APPEND file a single write lands whole, so notes
 * never interleave with the agent's own lines. */
static err_code write_once(int fd, const char *line, size_t len, char *err)
{
    ssize_t w;
    do
        w = write(fd, line, len);
    while (w < 0 && errno == EINTR);
    if (w < 0)
        return err_set(err, ERR_IO, "cannot write agent log note: %s", strerror(errno));
    if ((size_t)w != len)
        return err_set(err, ERR_IO, "agent log note cut short (%zd of %zu bytes)", w, len);
    return ERR_OK;
}

err_code agentlog_note(int fd, int64_t wall_ms, const char *level,
                       const char *logger, const char *message, char *err)
{
    char stamp[ASCTIME_SZ];
    if (fd < 0 || !level || !logger || !message)
        return err_set(err, ERR_USAGE, "agentlog_note: missing descriptor or text");
    if (!format_asctime(wall_ms, stamp, sizeof stamp))
        return err_set(err, ERR_USAGE, "agentlog_note: time %lld out of range", (long long)wall_ms);

    int n = snprintf(NULL, 0, "%s %s %s: %s\n", stamp, level, logger, message);
    char *raw = n > 0 ? malloc((size_t)n + 1) : NULL;
    if (!raw)
        return err_set(err, ERR_NOMEM, "agentlog_note: out of memory");
    snprintf(raw, (size_t)n + 1, "%s %s %s: %s\n", stamp, level, logger, message);
    /* masked before flattened: a secret holding a line break still matches */
    char *line = redact_str(raw);
    memset(raw, 0, (size_t)n);
    free(raw);
    if (!line)
        return err_set(err, ERR_NOMEM, "agentlog_note: out of memory");
    flatten(line, strlen(line) - 1);
    err_code rc = write_once(fd, line, strlen(line), err);
    free(line);
    return rc;
}
