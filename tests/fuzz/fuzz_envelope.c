/* libFuzzer: the REST envelope parser survives any body with any status,
 * and never quotes a registered secret in its message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "band_envelope.h"
#include "redact.h"

#define SECRET "fuzz-canary-key-0123456789"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int once;
    if (!once++)
        redact_add_secret(SECRET);
    if (size < 2)
        return 0;
    static const long statuses[] = {200, 201, 204, 400, 401, 404, 422, 429, 500, 503};
    long status = statuses[data[0] % (sizeof statuses / sizeof statuses[0])];
    char err[ERR_BUFSZ] = "";
    band_envelope env;
    band_envelope_parse(status, (const char *)data + 1, size - 1, &env, err);
    band_envelope_free(&env);
    if (strstr(err, SECRET))
        abort();
    return 0;
}
