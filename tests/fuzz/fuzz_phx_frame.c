/* libFuzzer: the Phoenix frame decoder survives anything a server sends. */
#include <stdint.h>

#include "phx_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[ERR_BUFSZ];
    phx_frame frame;
    phx_frame_decode((const char *)data, size, &frame, err);
    phx_frame_clear(&frame);
    return 0;
}
