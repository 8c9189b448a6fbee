/* ident: the random identifiers the fake hands out.
 *
 * Ids are version-4 UUID strings, like the platform's. API keys are long
 * random tokens with a recognisable prefix, so a leaked one is easy to spot
 * in a log (and long enough for the redaction layer to accept). Randomness
 * comes from OpenSSL; its failure aborts, since a fake that repeats ids
 * would make every test that relies on them lie.
 */
#ifndef FAKE_BAND_IDENT_H
#define FAKE_BAND_IDENT_H

#define IDENT_UUID_SZ 37 /* 36 characters and the NUL */
#define IDENT_KEY_SZ 128 /* room for any key a test writes in a key file */

/* "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx" into out. */
void ident_uuid(char out[IDENT_UUID_SZ]);

/* "band_fake_" followed by 48 hex digits into out. */
void ident_api_key(char out[IDENT_KEY_SZ]);

#endif
