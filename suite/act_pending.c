/* Phases whose actions arrive with the Band and sandbox work. Until then
 * they fail loudly: never a pass. */
#include "actions.h"

static void not_implemented(phase_env *env, const char *what)
{
    phase_check(env, 0, "NOT IMPLEMENTED: %s (%s)", env->def->ctest_name, what);
}

void act_preflight(phase_env *env) { not_implemented(env, "sbx and staging checks"); }
void act_sandbox(phase_env *env) { not_implemented(env, "sandbox create/reuse"); }
void act_launch(phase_env *env) { not_implemented(env, "provisioning and agent launch"); }
void act_probe(phase_env *env) { not_implemented(env, "marker round trip"); }
void act_daemon_restart(phase_env *env) { not_implemented(env, "sbx daemon restart"); }
void act_teardown(phase_env *env) { not_implemented(env, "remove the sandbox"); }
void act_cleanup(phase_env *env) { not_implemented(env, "reap room and agent"); }
