/* sig: the stop-signal flag (issue 11 part 2): caught signals set it once
 * and the process lives on; an inherited ignored SIGINT (nohup) stays
 * ignored; the exit code is 128 + the signal. */
#include "sig.h"
#include "unit.h"

#include <signal.h>
#include <string.h>

static void restore_defaults(void)
{
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    sig_clear();
}

static void test_caught_signals_set_the_flag_once(void)
{
    restore_defaults();
    sig_install();
    CU_ASSERT_EQUAL(sig_pending(), 0);
    CU_ASSERT_EQUAL(sig_exit_code(), 0);
    raise(SIGTERM); /* the process would die here were it not caught */
    CU_ASSERT_EQUAL(sig_pending(), SIGTERM);
    raise(SIGHUP); /* the first signal is the one that counts */
    CU_ASSERT_EQUAL(sig_pending(), SIGTERM);
    CU_ASSERT_EQUAL(sig_exit_code(), 128 + SIGTERM);
    sig_clear();
    raise(SIGINT);
    CU_ASSERT_EQUAL(sig_exit_code(), 130);
    CU_ASSERT_STRING_EQUAL(sig_name(SIGINT), "SIGINT");
    CU_ASSERT_STRING_EQUAL(sig_name(SIGHUP), "SIGHUP");
    CU_ASSERT_STRING_EQUAL(sig_name(SIGUSR1), "a signal");
    restore_defaults();
}

static void test_inherited_ignore_stays(void)
{
    restore_defaults();
    signal(SIGINT, SIG_IGN); /* as nohup or `trap '' INT` leave it */
    sig_install();
    struct sigaction now;
    sigaction(SIGINT, NULL, &now);
    CU_ASSERT_TRUE(now.sa_handler == SIG_IGN);
    raise(SIGINT);
    CU_ASSERT_EQUAL(sig_pending(), 0);
    sigaction(SIGTERM, NULL, &now);
    CU_ASSERT_TRUE(now.sa_handler != SIG_IGN && now.sa_handler != SIG_DFL);
    CU_ASSERT_EQUAL(now.sa_flags & SA_RESTART, 0); /* blocked calls must wake up */
    restore_defaults();
}

const unit_case unit_cases[] = {
    {"caught_signals_set_the_flag_once", test_caught_signals_set_the_flag_once},
    {"inherited_ignore_stays", test_inherited_ignore_stays},
    {NULL, NULL},
};
