/* scan: the canary proof. The rehearsal's secrets (the canary user key and
 * every agent key the fake Band minted) must appear in no file under the
 * state folder, in nothing any child printed, in no process's argv, and in
 * no process's environment except the sandboxed agent's (which holds its
 * own agent key, never the user key). SMOKE_CANARY_KEY=<canary> itself, the
 * knob that chose the canary, is not a leak: the driver, the fake Band and
 * any rehearsal beside this one inherit it from whoever started them. While the rehearsal runs, a thread
 * samples /proc every few milliseconds (Linux: tests only). */
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
    int hits;
    char first_hit[512];
} scan;

void scan_init(scan *s, const char *user_key, const char *agent_exe);
void scan_add_key(scan *s, const char *key); /* a minted agent key */
int scan_start(scan *s);
void scan_stop(scan *s);

/* Hits in one text / in every file under dir (recursively). Each hit is
 * counted in s->hits and described in s->first_hit. */
int scan_text(scan *s, const char *what, const char *text);
int scan_tree(scan *s, const char *dir);

#endif
