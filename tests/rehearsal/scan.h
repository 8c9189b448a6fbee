/* scan: the canary proof. The rehearsal's secrets (the canary user key and
 * every agent key the fake Band minted) must appear in no file under the
 * state folder, in nothing any child printed, in no process's argv, and in
 * no process's environment except the sandboxed agent's (which holds its
 * own agent key, never the user key). SMOKE_CANARY_KEY=<canary> itself, the
 * knob that chose the canary, is not a leak: the driver, the fake Band and
 * any rehearsal beside this one inherit it from whoever started them.
 * While the rehearsal runs, a thread sweeps /proc every 20 ms (Linux:
 * tests only), reading each process image once: a process is read again
 * when exec gives it a new argv and environment, or when a key is added. */
#ifndef REHEARSAL_SCAN_H
#define REHEARSAL_SCAN_H

#include <pthread.h>

#define SCAN_MAX_KEYS 32

typedef struct scan {
    char keys[SCAN_MAX_KEYS][128];
    int is_user_key[SCAN_MAX_KEYS];
    int nkeys;
    char agent_exe[1100];   /* the only program allowed an agent key in its environment */
    pthread_t thread;
    pthread_mutex_t lock;
    volatile int stop;
    int running;
    long samples;           /* /proc sweeps done */
    long searched;          /* processes whose argv and environment were read */
    long skipped;           /* processes seen unchanged since they were read */
    int hits;
    char first_hit[512];
    char core_exe[1100];    /* band-smoke: it and its children must have RLIMIT_CORE 0 */
    long core_checked;      /* processes whose core limit was read */
} scan;

void scan_init(scan *s, const char *user_key, const char *agent_exe);
void scan_add_key(scan *s, const char *key); /* a minted agent key */
int scan_start(scan *s);
void scan_stop(scan *s);
long scan_sweeps(scan *s); /* /proc sweeps finished so far, while it runs */

/* Core files may hold every secret a process had: none may exist. From
 * now on each /proc sweep also reads the core-file limit of every process
 * whose parent is band-smoke (exe); one above 0 is a hit. Independent of core_pattern. Call before scan_start. */
void scan_watch_core_limit(scan *s, const char *band_smoke_exe);

/* Core files (names starting "core") under dir, recursively, each one a
 * hit whatever it holds. Returns how many. */
int scan_cores(scan *s, const char *dir);

/* True when /proc/<pid> runs the program at `want` (a real path). */
int scan_proc_runs(const char *pid, const char *want);

/* Hits in one text / in every file under dir (recursively). Each hit is
 * counted in s->hits and described in s->first_hit. */
int scan_text(scan *s, const char *what, const char *text);
int scan_tree(scan *s, const char *dir);

#endif
