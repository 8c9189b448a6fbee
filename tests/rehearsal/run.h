/* run: start the rehearsal's child processes the way an operator would,
 * with the world's environment, and show what they print.
 *
 * Every child's output is streamed line by line with a prefix (the
 * operator's view) and kept whole for the canary scan. Every child runs in
 * its own process group under a deadline; at the deadline the group dies.
 */
#ifndef REHEARSAL_RUN_H
#define REHEARSAL_RUN_H

#include "world.h"

typedef struct run_out {
    int status;   /* exit code; 128 + signal; -1 when killed at the deadline */
    char *text;   /* everything it printed (stdout + stderr), malloc'd */
} run_out;

/* Runs argv with the world's environment, printing each line as
 * "<prefix><line>" (prefix NULL = print nothing). */
int run_child(world *w, char *const argv[], int timeout_ms, const char *prefix, run_out *out);

/* Same, discarding output; returns the status. */
int run_quiet(world *w, char *const argv[], int timeout_ms);

/* Starts argv in the background (own process group, output discarded) and
 * returns its pid; run_reap waits for it. */
int run_background(world *w, char *const argv[]);
int run_reap(int pid, int timeout_ms);

/* Sends sig to the process group of the child run_child waits for, if any.
 * Async-signal-safe: the driver's SIGINT/SIGTERM handler calls it, so a
 * Ctrl-C reaches the band-smoke step as it would in a terminal. */
void run_forward_signal(int sig);

/* Installs on_stop for SIGINT, SIGTERM and SIGHUP, except a signal the
 * caller's caller ignores (nohup: the operator asked for that). */
void run_catch_stops(void (*on_stop)(int));

/* Every byte any child printed, for the canary scan (borrowed). */
const char *run_all_output(void);
void run_out_free(run_out *out);

#endif
