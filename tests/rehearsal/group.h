/* group: several rehearsal scenarios at once, one driver process each.
 *
 *   band-smoke-rehearsal --scenario a,b,c [--jobs N] [other flags]
 *
 * A scenario mostly waits (outages, windows, deadlines), so CI runs a few
 * at the same time inside one ctest test instead of one after another.
 * Each scenario is the very program `--scenario NAME` runs: this program
 * again, with the same flags and one name, in a world of its own (temp
 * folders, fake Band ports, fake sbx state, sandbox name, canary). Its
 * output goes to its own buffer, never interleaved: the transcripts are
 * printed whole, in the order given, each as soon as it and those before
 * it have ended, then one summary line per scenario.
 *
 * The group owns its drivers: SIGINT, SIGTERM and SIGHUP are passed on to
 * each (every driver leads its own process group, so a terminal's Ctrl-C
 * reaches them once, through here), and each stops what it started.
 *
 * Returns the group's exit code: 0 when every scenario passed, 128 + the
 * signal when interrupted, else 1. Setup failures print why and return 2.
 */
#ifndef REHEARSAL_GROUP_H
#define REHEARSAL_GROUP_H

#define GROUP_MAX 16

/* argv: this program's arguments, argv[name_at] the comma list; names:
 * the scenarios (checked by the caller), n of them; at most jobs drivers
 * run at once (0 = all), the next starting as one ends: a sanitizer build
 * is many times slower, and its scenarios' deadlines are real time. */
int group_run(char *const argv[], int name_at, char *const names[], int n, int jobs);

#endif
