/* ctx tee: the operator lines of a phase, kept for its result in the state.
 *
 * Lines said while the tee runs are kept (and still printed), redacted,
 * the last CTX_TEE_LINES of them within STATE_OUTPUT_SZ - 1 bytes; a
 * multi-line message counts its lines; an over-long message is cut and
 * never pushes the others out; nothing is kept once the tee stops.
 */
#include "ctx.h"
#include "redact.h"
#include "tk.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CANARY "canary-tee-key-4b8d2e6f1a"

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void test_keeps_the_last_lines_redacted(void)
{
    redact_clear();
    UNIT_CHECK(redact_add_secret(CANARY) == ERR_OK, "canary");
    smoke_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.out = tmpfile();
    if (!UNIT_CHECK(ctx.out != NULL, "tmpfile"))
        return;
    ctx_say(&ctx, "before the tee");
    ctx_tee tee;
    ctx_tee_start(&ctx, &tee);
    for (int i = 0; i < 50; i++)
        ctx_say(&ctx, "line %02d key %s", i, CANARY);
    ctx_say(&ctx, "two\nlines");
    ctx_tee_stop(&ctx);
    ctx_say(&ctx, "after the tee");
    UNIT_CHECK(tee.lines == CTX_TEE_LINES && count_lines(tee.text) == CTX_TEE_LINES,
               "%d lines kept", tee.lines);
    UNIT_CHECK(strncmp(tee.text, "line 12 key ", 12) == 0, "the oldest kept: %.20s", tee.text);
    UNIT_CHECK(strlen(tee.text) == tee.len && tee.len > 4 &&
                   strcmp(tee.text + tee.len - 10, "two\nlines\n") == 0,
               "ends with the multi-line message");
    UNIT_CHECK(!strstr(tee.text, CANARY) && strstr(tee.text, REDACT_MASK), "redacted");
    UNIT_CHECK(!strstr(tee.text, "before") && !strstr(tee.text, "after"),
               "only the lines said while it ran");
    rewind(ctx.out);
    char printed[16384];
    size_t n = fread(printed, 1, sizeof printed - 1, ctx.out);
    printed[n] = '\0';
    UNIT_CHECK(strstr(printed, "before the tee\nline 00 key ") && strstr(printed, "after the tee\n"),
               "everything is still printed");
    fclose(ctx.out);
    redact_clear();
}

static void test_long_messages_are_bounded(void)
{
    smoke_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.out = tmpfile();
    if (!UNIT_CHECK(ctx.out != NULL, "tmpfile"))
        return;
    char big[4000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ctx_tee tee;
    ctx_tee_start(&ctx, &tee);
    ctx_say(&ctx, "first");
    for (int i = 0; i < 10; i++)
        ctx_say(&ctx, "%s", big);
    ctx_say(&ctx, "last");
    ctx_tee_stop(&ctx);
    UNIT_CHECK(tee.len < sizeof tee.text && strlen(tee.text) == tee.len, "bounded: %zu bytes",
               tee.len);
    UNIT_CHECK(tee.len >= 5 && strcmp(tee.text + tee.len - 5, "last\n") == 0,
               "the newest line is kept");
    UNIT_CHECK(count_lines(tee.text) == tee.lines && tee.lines >= 4,
               "several long lines fit (%d)", tee.lines);
    fclose(ctx.out);
}

const unit_case unit_cases[] = {
    {"keeps_the_last_lines_redacted", test_keeps_the_last_lines_redacted},
    {"long_messages_are_bounded", test_long_messages_are_bounded},
    {NULL, NULL},
};
