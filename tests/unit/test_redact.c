/* redact: secrets and key patterns are masked wherever they appear, and
 * nothing else changes. */
#include "redact.h"
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CANARY "canary-7f3a9c2e5b1d"

/* Redacts `in` and checks the result is exactly `want`. */
static void expect(const char *in, const char *want, int line)
{
    char *got = redact_str(in);
    if (!unit_check(got != NULL, line, __FILE__, "redact_str returned NULL"))
        return;
    unit_check(strcmp(got, want) == 0, line, __FILE__,
               "redact(\"%s\")\n  got  \"%s\"\n  want \"%s\"", in, got, want);
    free(got);
}
#define EXPECT(in, want) expect((in), (want), __LINE__)

static size_t count(const char *text, const char *needle)
{
    size_t n = 0, len = strlen(needle);
    for (const char *p = strstr(text, needle); p; p = strstr(p + len, needle))
        n++;
    return n;
}

static void test_short_and_null_secrets_are_refused(void)
{
    redact_clear();
    CU_ASSERT_EQUAL(redact_add_secret(NULL), ERR_USAGE);
    CU_ASSERT_EQUAL(redact_add_secret(""), ERR_USAGE);
    CU_ASSERT_EQUAL(redact_add_secret("1234567"), ERR_USAGE);
    EXPECT("pin 1234567 stays", "pin 1234567 stays");
    CU_ASSERT_EQUAL(redact_add_secret("12345678"), ERR_OK);
    EXPECT("pin 12345678 goes", "pin [REDACTED] goes");
    redact_clear();
}

static void test_registry_fills_up_and_ignores_duplicates(void)
{
    redact_clear();
    char value[32];
    for (int i = 0; i < REDACT_MAX_SECRETS; i++) {
        snprintf(value, sizeof value, "secret-number-%02d", i);
        UNIT_CHECK(redact_add_secret(value) == ERR_OK, "secret %d refused", i);
    }
    CU_ASSERT_EQUAL(redact_add_secret("secret-number-00"), ERR_OK);
    CU_ASSERT_EQUAL(redact_add_secret("one-secret-too-many"), ERR_FULL);
    EXPECT("secret-number-31 secret-number-00 one-secret-too-many",
           "[REDACTED] [REDACTED] one-secret-too-many");
    redact_clear();
    EXPECT("secret-number-31", "secret-number-31");
}

static void test_secret_anywhere_in_text(void)
{
    redact_clear();
    CU_ASSERT_EQUAL(redact_add_secret(CANARY), ERR_OK);
    EXPECT(CANARY, "[REDACTED]");
    EXPECT(CANARY " at the start", "[REDACTED] at the start");
    EXPECT("at the end " CANARY, "at the end [REDACTED]");
    EXPECT("inside-a-word" CANARY "continues", "inside-a-word[REDACTED]continues");
    EXPECT("a " CANARY " b " CANARY " c", "a [REDACTED] b [REDACTED] c");
    EXPECT(CANARY CANARY, "[REDACTED]");
    EXPECT("line1\n" CANARY "\nline3", "line1\n[REDACTED]\nline3");
    /* a prefix of the secret is not the secret */
    EXPECT("canary-7f3a9c2e5b1", "canary-7f3a9c2e5b1");
    redact_clear();
}

static void test_overlapping_secrets_mask_fully(void)
{
    redact_clear();
    CU_ASSERT_EQUAL(redact_add_secret("abcdefgh12"), ERR_OK);
    CU_ASSERT_EQUAL(redact_add_secret("gh12345678"), ERR_OK);
    EXPECT("x abcdefgh12345678 y", "x [REDACTED] y");
    /* registered in the other order, and one inside another */
    redact_clear();
    CU_ASSERT_EQUAL(redact_add_secret("SECRETKEY"), ERR_OK);
    CU_ASSERT_EQUAL(redact_add_secret("the-SECRETKEY-long"), ERR_OK);
    EXPECT("<the-SECRETKEY-long>", "<[REDACTED]>");
    EXPECT("<SECRETKEY>", "<[REDACTED]>");
    /* a secret overlapping itself */
    redact_clear();
    CU_ASSERT_EQUAL(redact_add_secret("abababab"), ERR_OK);
    EXPECT("xabababababy", "x[REDACTED]y");
    redact_clear();
}

static void test_header_pattern_any_spelling(void)
{
    redact_clear();
    EXPECT("X-API-Key: abc123", "X-API-Key: [REDACTED]");
    EXPECT("x-api-key:abc123", "x-api-key:[REDACTED]");
    EXPECT("X-API-KEY : abc 123\nnext line", "X-API-KEY : [REDACTED]\nnext line");
    EXPECT("> x-Api-kEY:\tvalue\r\n> Accept: */*", "> x-Api-kEY:\t[REDACTED]\r\n> Accept: */*");
    EXPECT("headers {\"x-api-key\": \"abc\"}", "headers {\"x-api-key\": [REDACTED]");
    /* the name alone, or an empty value, carries nothing to hide */
    EXPECT("missing X-API-Key header", "missing X-API-Key header");
    EXPECT("X-API-Key:\nnext", "X-API-Key:\nnext");
}

static void test_query_pattern_keeps_the_rest_of_the_url(void)
{
    redact_clear();
    EXPECT("wss://h/api/v1/socket/websocket?api_key=k-123&vsn=2.0.0",
           "wss://h/api/v1/socket/websocket?api_key=[REDACTED]&vsn=2.0.0");
    EXPECT("GET /x?vsn=2.0.0&API_KEY=k-123 HTTP/1.1", "GET /x?vsn=2.0.0&API_KEY=[REDACTED] HTTP/1.1");
    EXPECT("url='wss://h/s?Api_Key=k-123'", "url='wss://h/s?Api_Key=[REDACTED]'");
    EXPECT("\"wss://h/s?api_key=k-123\"", "\"wss://h/s?api_key=[REDACTED]\"");
    EXPECT("ends with api_key=k-123", "ends with api_key=[REDACTED]");
    EXPECT("api_key=k-123\nnext", "api_key=[REDACTED]\nnext");
    EXPECT("empty api_key=&vsn=2.0.0", "empty api_key=&vsn=2.0.0");
    EXPECT("the api_key is required", "the api_key is required");
}

static void test_assignment_pattern(void)
{
    redact_clear();
    EXPECT("BAND_API_KEY=k-123", "BAND_API_KEY=[REDACTED]");
    EXPECT("BAND_API_KEY_USER=u-456 BAND_WS_URL=wss://h",
           "BAND_API_KEY_USER=[REDACTED] BAND_WS_URL=wss://h");
    EXPECT("export BAND_API_KEY_USER=\"u 456\" # note", "export BAND_API_KEY_USER=\"[REDACTED]\" # note");
    EXPECT("band_api_key_user = 'u-456'\nX=1", "band_api_key_user = '[REDACTED]'\nX=1");
    EXPECT("BAND_API_KEY_USER_2=u-789&x", "BAND_API_KEY_USER_2=[REDACTED]");
    EXPECT("BAND_API_KEY_USER is required (the staging user key)",
           "BAND_API_KEY_USER is required (the staging user key)");
    EXPECT("BAND_API_KEY_USER=", "BAND_API_KEY_USER=");
}

static void test_text_without_secrets_is_unchanged(void)
{
    redact_clear();
    CU_ASSERT_EQUAL(redact_add_secret(CANARY), ERR_OK);
    const char *plain[] = {
        "",
        "2026-08-12 10:59:30,109 INFO band.agent: Agent started: e2e-band-1a2b3c4d-sandbox (band-sdk 1.6.0)",
        "WebSocket reconnected \xe2\x80\x94 reconciling room state",
        "a b c x y z ABX [REDACTED] band band_api api_key api-key x-api",
        "tabs\tand\nnewlines\r\n",
    };
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
        EXPECT(plain[i], plain[i]);
    char *empty = redact_str(NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(empty);
    CU_ASSERT_STRING_EQUAL(empty, "");
    free(empty);
    redact_clear();
}

static double elapsed_ms(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) * 1e3 + (double)(b->tv_nsec - a->tv_nsec) / 1e6;
}


static void test_megabyte_with_ten_secrets(void)
{
    redact_clear();
    char secrets[10][40];
    for (int i = 0; i < 10; i++) {
        snprintf(secrets[i], sizeof secrets[i], "sk-live-%02d-9f8e7d6c5b4a", i);
        CU_ASSERT_EQUAL(redact_add_secret(secrets[i]), ERR_OK);
    }
    /* log-like filler full of the letters the patterns start with */
    const size_t size = 1024 * 1024;
    char *text = malloc(size + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    const char filler[] = "band api x-ray: a bax abc key=value&b=x\n";
    for (size_t i = 0; i < size; i++)
        text[i] = filler[i % (sizeof filler - 1)];
    text[size] = '\0';
    for (int i = 0; i < 10; i++) {
        size_t at = (size_t)i * (size / 10) + 7;
        memcpy(text + at, secrets[i], strlen(secrets[i]));
    }

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char *out = redact_str(text);
    clock_gettime(CLOCK_MONOTONIC, &t1);

    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    UNIT_CHECK(count(out, REDACT_MASK) == 10, "%zu masks, want 10", count(out, REDACT_MASK));
    UNIT_CHECK(!redact_has_secret(out, strlen(out)), "a secret survived");
    UNIT_CHECK(redact_has_secret(text, size), "has_secret misses the input's secrets");
    /* Speed is a benchmark's business, not a test's: shown, not asserted. */
    printf(" [1 MB with 10 secrets redacted in %.1f ms] ", elapsed_ms(&t0, &t1));
    free(out);
    free(text);
    redact_clear();
}

static void test_into_truncates_and_terminates(void)
{
    redact_clear();
    CU_ASSERT_EQUAL(redact_add_secret(CANARY), ERR_OK);
    char out[16];
    redact_into("key " CANARY " and more text", out, sizeof out);
    CU_ASSERT_STRING_EQUAL(out, "key [REDACTED] ");
    redact_into("key " CANARY, out, 8);
    CU_ASSERT_STRING_EQUAL(out, "key [RE");
    redact_into("anything", out, 1);
    CU_ASSERT_STRING_EQUAL(out, "");
    out[0] = 'x';
    redact_into("anything", out, 0);
    CU_ASSERT_EQUAL(out[0], 'x');
    redact_into(NULL, out, sizeof out);
    CU_ASSERT_STRING_EQUAL(out, "");
    redact_clear();
}

static void test_has_secret_respects_length(void)
{
    redact_clear();
    CU_ASSERT_FALSE(redact_has_secret("x " CANARY, 21));
    CU_ASSERT_EQUAL(redact_add_secret(CANARY), ERR_OK);
    const char *text = "x " CANARY " y";
    CU_ASSERT_TRUE(redact_has_secret(text, strlen(text)));
    CU_ASSERT_TRUE(redact_has_secret(text, 2 + strlen(CANARY)));
    CU_ASSERT_FALSE(redact_has_secret(text, 2 + strlen(CANARY) - 1));
    CU_ASSERT_FALSE(redact_has_secret("X-API-Key: not-registered", 25));
    CU_ASSERT_FALSE(redact_has_secret(NULL, 0));
    redact_clear();
}

static void test_fprintf_redacts_long_output(void)
{
    redact_clear();
    CU_ASSERT_EQUAL(redact_add_secret(CANARY), ERR_OK);
    FILE *fp = tmpfile();
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    /* longer than any fixed first buffer, with the secret at the very end */
    char pad[5000];
    memset(pad, 'p', sizeof pad - 1);
    pad[sizeof pad - 1] = '\0';
    int rc = redact_fprintf(fp, "%s|%d|%s|X-API-Key: %s\n", pad, 42, CANARY, "hdr-value");
    CU_ASSERT(rc >= 0);
    long size = ftell(fp);
    rewind(fp);
    char *back = calloc((size_t)size + 1, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    CU_ASSERT_EQUAL(fread(back, 1, (size_t)size, fp), (size_t)size);
    fclose(fp);
    size_t want_len = strlen(pad) + strlen("|42|[REDACTED]|X-API-Key: [REDACTED]\n");
    UNIT_CHECK((size_t)size == want_len, "wrote %ld bytes, want %zu", size, want_len);
    UNIT_CHECK(strstr(back, "|42|[REDACTED]|X-API-Key: [REDACTED]\n") != NULL,
               "tail is \"%s\"", back + strlen(pad));
    UNIT_CHECK(strstr(back, CANARY) == NULL && strstr(back, "hdr-value") == NULL,
               "a secret reached the file");
    free(back);
    redact_clear();
}

const unit_case unit_cases[] = {
    {"short_and_null_secrets_are_refused", test_short_and_null_secrets_are_refused},
    {"registry_fills_up_and_ignores_duplicates", test_registry_fills_up_and_ignores_duplicates},
    {"secret_anywhere_in_text", test_secret_anywhere_in_text},
    {"overlapping_secrets_mask_fully", test_overlapping_secrets_mask_fully},
    {"header_pattern_any_spelling", test_header_pattern_any_spelling},
    {"query_pattern_keeps_the_rest_of_the_url", test_query_pattern_keeps_the_rest_of_the_url},
    {"assignment_pattern", test_assignment_pattern},
    {"text_without_secrets_is_unchanged", test_text_without_secrets_is_unchanged},
    {"megabyte_with_ten_secrets", test_megabyte_with_ten_secrets},
    {"into_truncates_and_terminates", test_into_truncates_and_terminates},
    {"has_secret_respects_length", test_has_secret_respects_length},
    {"fprintf_redacts_long_output", test_fprintf_redacts_long_output},
    {NULL, NULL},
};
