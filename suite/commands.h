/* commands: the band-smoke subcommands other than `phase`.
 *
 *   status                          where the run stands and the next command
 *   status --brief                  the same in three lines (the end of a ctest run)
 *   record-phase PHASE              set the run phase (started, ..., failed)
 *   record-observation CHECK TEXT.. sleep_wake | daemon_restart
 *   confirm sleep-wake              the operator's word that the host slept
 *   report                          render evidence.md and junit.xml now
 *
 * Each returns the process exit code: 0 done, 1 failed (a message says
 * why), 2 usage.
 */
#ifndef SMOKE_COMMANDS_H
#define SMOKE_COMMANDS_H

#include "ctx.h"

int cmd_status(smoke_ctx *ctx);
int cmd_status_brief(smoke_ctx *ctx);
int cmd_record_phase(smoke_ctx *ctx, int argc, char **argv);
int cmd_record_observation(smoke_ctx *ctx, int argc, char **argv);
int cmd_confirm(smoke_ctx *ctx, int argc, char **argv);
int cmd_report(smoke_ctx *ctx);

#endif
