#include "ident.h"

#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>

static void random_bytes(unsigned char *buf, int n)
{
    if (RAND_bytes(buf, n) != 1)
        abort();
}

void ident_uuid(char out[IDENT_UUID_SZ])
{
    unsigned char b[16];
    random_bytes(b, sizeof b);
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    snprintf(out, IDENT_UUID_SZ,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
             b[15]);
}

void ident_api_key(char out[IDENT_KEY_SZ])
{
    unsigned char b[24];
    random_bytes(b, sizeof b);
    int n = snprintf(out, IDENT_KEY_SZ, "band_fake_");
    for (size_t i = 0; i < sizeof b; i++)
        n += snprintf(out + n, (size_t)(IDENT_KEY_SZ - n), "%02x", b[i]);
}
