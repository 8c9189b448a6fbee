/* libFuzzer: the run state loader never crashes, leaks or overreads, and
 * whatever it accepts it writes back into something it accepts again. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[ERR_BUFSZ];
    state_t *st = calloc(1, sizeof *st);
    if (!st)
        return 0;
    if (state_parse((const char *)data, size, "fuzz", st, err) == ERR_OK) {
        char *json = state_to_json(st);
        state_t *again = calloc(1, sizeof *again);
        if (json && again && state_parse(json, strlen(json), "fuzz/rt", again, err) != ERR_OK)
            abort(); /* written by us, refused by us: a real bug */
        free(again);
        free(json);
    }
    free(st);
    return 0;
}
