/* agentlog: what the agent's own log says happened, and when.
 *
 * agent.log holds the SDK's lines verbatim, in its format
 * `%(asctime)s %(levelname)s %(name)s: %(message)s` (asctime like
 * `2026-08-12 10:59:30,109`, UTC: the agent payload logs in UTC), plus the
 * launcher's own notes in the same format under the logger
 * `band_smoke.launcher`. The evidence gates ask this module three questions:
 * is the agent ready, did its WebSocket drop after time T, and did it
 * reconnect after that drop.
 *
 * Patterns are substrings of a line after its timestamp (level, logger and
 * message, so a pattern may name the logger too). Defaults are the SDK's
 * own lines (band-protocol.md 8.3); each can be overridden by environment:
 *   SMOKE_LOG_READY       default "Agent started:"
 *   SMOKE_LOG_DISCONNECT  default "WebSocket disconnected"
 *   SMOKE_LOG_RECONNECT   default "WebSocket reconnected"
 * The launcher's exit note is fixed: AGENTLOG_EXIT_NOTE.
 *
 * Launch identity. agent.log outlives every launch, and a launch whose
 * band-smoke was SIGKILLed before it recorded its launcher leaves that
 * launcher (and its agent) running, writing into the same file under the
 * same generation number. Generation numbers and file offsets therefore
 * cannot tell two launches apart; the launcher's own incarnation can: every
 * note a launcher writes names it as "launcher PID@TOKEN)" (its pid and
 * kernel start token, platform.h), the same pair the launch records in the
 * run state. agentlog_scan_launch counts only the exit note of one
 * incarnation; agentlog_launchers lists the incarnations a log names, so a
 * new launch can stop the ones still running before it starts.
 */
#ifndef SMOKE_AGENTLOG_H
#define SMOKE_AGENTLOG_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define AGENTLOG_PATTERN_SZ 128
#define AGENTLOG_LINE_SZ 512
#define AGENTLOG_LAUNCHER "band_smoke.launcher"
#define AGENTLOG_EXIT_NOTE "agent process ended:"
/* Bounds of one scan: bytes read past from_offset, and time. */
#define AGENTLOG_SCAN_MAX_BYTES (64LL * 1024 * 1024)
#define AGENTLOG_SCAN_MAX_MS 10000

typedef struct agentlog_patterns {
    char ready[AGENTLOG_PATTERN_SZ];
    char disconnect[AGENTLOG_PATTERN_SZ];
    char reconnect[AGENTLOG_PATTERN_SZ];
} agentlog_patterns;

/* The SDK defaults. */
void agentlog_patterns_default(agentlog_patterns *p);

/* Defaults, then any SMOKE_LOG_* variable that is set and non-empty.
 * ERR_CONFIG when one is longer than AGENTLOG_PATTERN_SZ - 1. */
err_code agentlog_patterns_from_env(agentlog_patterns *p, char *err);

/* One matched line: its own timestamp, where it starts in the file, and
 * the line itself, redacted and trimmed to fit. at_ms 0 = not found. */
typedef struct agentlog_event {
    int64_t at_ms;
    int64_t offset;
    char line[AGENTLOG_LINE_SZ];
} agentlog_event;

typedef struct agentlog_scan {
    agentlog_event ready;      /* first readiness line */
    agentlog_event disconnect; /* first disconnect at or after `after_ms` */
    agentlog_event reconnect;  /* first reconnect after that disconnect */
    agentlog_event exit;       /* last launcher exit note */
    int disconnects;           /* disconnect lines at or after after_ms */
    int reconnects;            /* reconnect lines at or after after_ms */
} agentlog_scan;

/* Scans `path` from byte `from_offset` (a launch generation's start),
 * counting only lines stamped at or after `after_ms` for the disconnect and
 * reconnect questions (readiness and exit: any line past from_offset).
 * Lines without a parsable timestamp are skipped; a line longer than 4 KiB
 * is judged by its first 4 KiB (timestamp, logger and the start of the
 * message are all there). The reconnect must follow the disconnect in the
 * file and not be stamped before it. A missing file is an empty log (ERR_OK,
 * nothing found); unreadable is ERR_IO, and so is a symlink, FIFO or
 * device (opened with O_NOFOLLOW|O_NONBLOCK, never read). A scan reads
 * up to the size the file had when opened, at most AGENTLOG_SCAN_MAX_BYTES
 * past from_offset, and gives up with ERR_TIMEOUT (what it found so far
 * kept in *out) after AGENTLOG_SCAN_MAX_MS. */
err_code agentlog_scan_file(const char *path, int64_t from_offset,
                            int64_t after_ms, const agentlog_patterns *p,
                            agentlog_scan *out, char *err);

/* As agentlog_scan_file with after_ms 0, but `exit` is the last exit note
 * that names `launcher_id` (agentlog_launcher_id); another launcher's
 * note, whatever its generation, is not this launch's end. NULL or "" = any exit note. */
err_code agentlog_scan_launch(const char *path, int64_t from_offset, const char *launcher_id,
                              const agentlog_patterns *p, agentlog_scan *out, char *err);

#define AGENTLOG_LAUNCHER_ID_SZ 64

/* Writes "launcher PID@TOKEN)" to buf: how a launcher's notes name it. The
 * closing parenthesis ends the number, so pid 12 never matches pid 123. */
void agentlog_launcher_id(long pid, uint64_t start_token, char *buf, size_t cap);

/* One launcher incarnation named in agent.log. */
typedef struct agentlog_launcher {
    long pid;
    uint64_t start_token;
    int ended; /* its exit note was seen */
} agentlog_launcher;

/* The distinct launcher incarnations that notes of the logger
 * AGENTLOG_LAUNCHER past from_offset name, in order of first mention, at
 * most cap of them in out (*n says how many; *more is set when there were
 * others). Bounded and opened like agentlog_scan_file; same errors. The
 * names are only claims: check a process with plat_proc_alive(pid, token)
 * before acting on it (an agent could print a line that looks like a note,
 * but not know a host process's start token). */
err_code agentlog_launchers(const char *path, int64_t from_offset, agentlog_launcher *out,
                            size_t cap, size_t *n, int *more, char *err);

/* Writes one line in the SDK's format to an open log file descriptor, so the
 * launcher's notes sit beside the agent's own lines:
 * "2026-12-02 11:46:20,123 INFO band_smoke.launcher: <message>\n". The
 * message is redacted. Returns ERR_IO if the write fails. */
err_code agentlog_note(int fd, int64_t wall_ms, const char *level,
                       const char *logger, const char *message, char *err);

#endif
