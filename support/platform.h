/* platform: the only place that knows Linux from macOS.
 *
 * Everything else in this suite is POSIX C11. What POSIX does not give us
 * lives here, behind #ifdef, each with a Linux and a macOS implementation:
 * the suspend-aware clocks, the identity of a running process and the
 * arguments of this process's parent.
 */
#ifndef SMOKE_PLATFORM_H
#define SMOKE_PLATFORM_H

#include <stdint.h>
#include <sys/types.h>

/* Milliseconds of a clock that stops while the host is suspended. */
int64_t plat_awake_ms(void);

/* Milliseconds of a clock that keeps counting while the host is suspended. */
int64_t plat_total_ms(void);

/* A token naming one process incarnation: its start time in the kernel's own
 * units (Linux: clock ticks since boot from /proc/PID/stat; macOS: the
 * start timeval from sysctl KERN_PROC, in microseconds). A pid alone can be
 * reused; pid plus this token cannot. Returns 0 when the process does not
 * exist or cannot be inspected. */
uint64_t plat_proc_start_token(pid_t pid);

/* True when `pid` runs and is still the incarnation named by `token`. A
 * zombie (exited, not yet reaped) counts as not alive; a token of 0 (never
 * learned) matches nothing. */
int plat_proc_alive(pid_t pid, uint64_t token);

/* Keeps this process's memory (which holds the user key and minted agent
 * keys) out of core files: RLIMIT_CORE 0, soft and hard, which every child
 * inherits across fork and exec; on Linux also PR_SET_DUMPABLE 0 (no core,
 * no ptrace or /proc/PID/mem by others of the same user; exec resets it
 * for children, the rlimit stays). Call first thing in main. Returns 0, or
 * -1 when the rlimit could not be set (errno says why). */
int plat_harden_process(void);

/* The argv of this process's parent (Linux: /proc/PPID/cmdline; macOS:
 * sysctl KERN_PROCARGS2), copied into buf as consecutive NUL-terminated
 * strings, cut at cap. Returns how many strings, or -1 when it cannot be
 * read. For a hook to learn how the program that ran it was invoked. */
int plat_parent_argv(char *buf, size_t cap);

#endif
