/* sdklog: the stand-in's log lines, in the band-sdk's own words.
 *
 * agent.py logs with `%(asctime)s %(levelname)s %(name)s: %(message)s` in
 * UTC to stderr, and band-smoke's evidence gates read those lines out of
 * agent.log (support/agentlog.h). The stand-in writes the same lines under
 * the same logger names (band-protocol.md section 8.3), so the gates, the
 * rehearsal and an operator reading the log cannot tell the difference
 * except by the version in the readiness line.
 *
 * Every line is one write(2) to stderr through agentlog_note, so it is
 * redacted (the agent key never reaches the log) and never interleaves
 * with another writer's line on an O_APPEND log. A line that cannot be
 * written is dropped: stderr is the only place a failure could be told.
 */
#ifndef FAKE_AGENT_SDKLOG_H
#define FAKE_AGENT_SDKLOG_H

/* The SDK's logger names (the %(name)s field). */
#define SDKLOG_MAIN "__main__"
#define SDKLOG_AGENT "band.agent"
#define SDKLOG_LINK "band.platform.link"
#define SDKLOG_STREAMING "band.client.streaming.client"
#define SDKLOG_PHOENIX "phoenix_channels_python_client.client"
#define SDKLOG_PRESENCE "band.runtime.presence"
#define SDKLOG_RUNTIME "band.runtime.runtime"
#define SDKLOG_EXECUTION "band.runtime.execution"
#define SDKLOG_WORKING "band.runtime.working_state"
/* Section 8.3 documents the per-message lines under the LangGraph
 * adapter's logger; agent.py's SimpleAdapter is not documented there. */
#define SDKLOG_ADAPTER "band.adapters.langgraph"

void sdklog_info(const char *logger, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void sdklog_warning(const char *logger, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void sdklog_error(const char *logger, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Python's str() of a bool, for lines that print one. */
const char *sdklog_bool(int value);

#endif
