#include "redact.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_SECRET_LEN 8

/* Every spelling of a secret the code (or a server echoing it) may print:
 * the value itself and its re-encodings. Each is masked wherever it
 * appears, so escaping a text before it reaches redact cannot unmask it. */
typedef enum secret_form {
    FORM_RAW,
    FORM_JSON,    /* cJSON / json.dumps string escaping */
    FORM_JSON2,   /* JSON escaped twice: a JSON document inside a string */
    FORM_XML,     /* junit.xml's entities */
    FORM_MD,      /* evidence.md's backslash escapes */
    FORM_FLAT,    /* control bytes made spaces (one-line excerpts, notes) */
    FORM_PYTHON,  /* Python repr() in the agent's own log lines */
    FORM_PERCENT, /* percent-encoding (a key in a query string) */
    FORM__COUNT
} secret_form;

/* The one global of support/ (see redact.h for why). A form equal to an
 * earlier one is not stored (NULL). */
static struct {
    char *form[REDACT_MAX_SECRETS][FORM__COUNT];
    size_t len[REDACT_MAX_SECRETS][FORM__COUNT];
    size_t count;
} registry;

/* The encoding of one byte in `form`; returns its length (0: dropped). */
static size_t encode_byte(secret_form form, unsigned char c, char out[8])
{
    static const char hex[] = "0123456789abcdef", HEX[] = "0123456789ABCDEF";
    const char *ent = NULL;
    switch (form) {
    case FORM_JSON:
    case FORM_JSON2:
        ent = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\r' ? "\\r"
            : c == '\t' ? "\\t" : c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;
        if (!ent && c < 0x20)
            return (size_t)snprintf(out, 8, "\\u%04x", c);
        break;
    case FORM_XML:
        ent = c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '"' ? "&quot;"
            : c == '\'' ? "&apos;" : c == '\r' ? "&#13;" : NULL;
        break;
    case FORM_MD:
        if (c == '\n' || c == '\r' || c == '\t')
            ent = " ";
        else if (c < 0x20 || c == 0x7f)
            return 0;
        else if (c && strchr("\\`*_<>[]|&~", c))
            return (size_t)snprintf(out, 8, "\\%c", c);
        break;
    case FORM_FLAT:
        if (c < 0x20 || c == 0x7f)
            ent = " ";
        break;
    case FORM_PYTHON:
        ent = c == '\\' ? "\\\\" : c == '\'' ? "\\'" : c == '\n' ? "\\n" : c == '\r' ? "\\r"
            : c == '\t' ? "\\t" : NULL;
        if (!ent && (c < 0x20 || c == 0x7f))
            return (size_t)snprintf(out, 8, "\\x%c%c", hex[c >> 4], hex[c & 15]);
        break;
    case FORM_PERCENT:
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              (c && strchr("-._~", c)))) {
            out[0] = '%';
            out[1] = HEX[c >> 4];
            out[2] = HEX[c & 15];
            return 3;
        }
        break;
    case FORM_RAW:
    case FORM__COUNT:
        break;
    }
    if (ent) {
        size_t n = strlen(ent);
        memcpy(out, ent, n);
        return n;
    }
    out[0] = (char)c;
    return 1;
}

/* The malloc'd encoding of value in `form`, NULL when out of memory. */
static char *encode(secret_form form, const char *value, size_t len, size_t *out_len)
{
    char *out = malloc(len * 8 + 1), piece[8];
    if (!out)
        return NULL;
    size_t used = 0;
    for (size_t i = 0; i < len; i++) {
        size_t n = encode_byte(form, (unsigned char)value[i], piece);
        memcpy(out + used, piece, n);
        used += n;
    }
    out[used] = '\0';
    *out_len = used;
    if (form == FORM_JSON2) { /* the JSON escaping of the JSON escaping */
        char *twice = encode(FORM_JSON, out, used, out_len);
        free(out);
        return twice;
    }
    return out;
}

static void forget(size_t s)
{
    for (int f = 0; f < FORM__COUNT; f++) {
        if (!registry.form[s][f])
            continue;
        /* a freed secret should not linger in the heap for a later dump */
        memset(registry.form[s][f], 0, registry.len[s][f]);
        free(registry.form[s][f]);
        registry.form[s][f] = NULL;
    }
}

/* Fills the forms of slot s from its raw value; 0 when out of memory. */
static int add_forms(size_t s)
{
    for (int f = FORM_RAW + 1; f < FORM__COUNT; f++) {
        size_t len = 0;
        char *text = encode((secret_form)f, registry.form[s][FORM_RAW], registry.len[s][FORM_RAW],
                            &len);
        if (!text)
            return 0;
        int seen = len < MIN_SECRET_LEN;
        for (int g = 0; !seen && g < f; g++)
            seen = registry.form[s][g] && registry.len[s][g] == len &&
                   memcmp(registry.form[s][g], text, len) == 0;
        if (seen) {
            memset(text, 0, len);
            free(text);
        } else {
            registry.form[s][f] = text;
            registry.len[s][f] = len;
        }
    }
    return 1;
}

err_code redact_add_secret(const char *value)
{
    if (!value)
        return ERR_USAGE;
    size_t len = strlen(value);
    if (len < MIN_SECRET_LEN)
        return ERR_USAGE;
    for (size_t i = 0; i < registry.count; i++)
        if (registry.len[i][FORM_RAW] == len && memcmp(registry.form[i][FORM_RAW], value, len) == 0)
            return ERR_OK;
    if (registry.count == REDACT_MAX_SECRETS)
        return ERR_FULL;
    size_t s = registry.count;
    char *copy = malloc(len + 1);
    if (!copy)
        return ERR_NOMEM;
    memcpy(copy, value, len + 1);
    registry.form[s][FORM_RAW] = copy;
    registry.len[s][FORM_RAW] = len;
    if (!add_forms(s)) {
        forget(s);
        return ERR_NOMEM;
    }
    registry.count++;
    return ERR_OK;
}

void redact_clear(void)
{
    for (size_t i = 0; i < registry.count; i++)
        forget(i);
    memset(&registry, 0, sizeof registry);
}

/* ---- finding what to hide ------------------------------------------------
 *
 * Redaction works in two passes: first every byte that must go is marked in
 * a map (all occurrences of all secrets, then all pattern values), then the
 * text is copied with each run of marked bytes replaced by one mask. Marking
 * before replacing is what makes overlapping secrets disappear entirely: a
 * replace-as-you-go pass would consume the first secret and leave the tail
 * of the one overlapping it in clear.
 */

static const char *find(const char *hay, size_t hay_len, const char *needle,
                        size_t needle_len)
{
    const char *end = hay + hay_len;
    while ((size_t)(end - hay) >= needle_len) {
        const char *p = memchr(hay, needle[0], (size_t)(end - hay) - needle_len + 1);
        if (!p)
            return NULL;
        if (memcmp(p, needle, needle_len) == 0)
            return p;
        hay = p + 1;
    }
    return NULL;
}

static void mark_one(const char *text, size_t len, const char *needle, size_t needle_len,
                     unsigned char *hide)
{
    const char *at = text;
    size_t left = len;
    const char *hit;
    while ((hit = find(at, left, needle, needle_len)) != NULL) {
        size_t start = (size_t)(hit - text);
        memset(hide + start, 1, needle_len);
        /* overlapping repeats of one secret ("abab" in "ababab") too */
        at = hit + 1;
        left = len - start - 1;
    }
}

static void mark_secrets(const char *text, size_t len, unsigned char *hide)
{
    for (size_t s = 0; s < registry.count; s++)
        for (int f = 0; f < FORM__COUNT; f++)
            if (registry.form[s][f])
                mark_one(text, len, registry.form[s][f], registry.len[s][f], hide);
}

static char ascii_lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Length of `lit` (lowercase) when text starts with it in any case, else 0. */
static size_t starts_with_ci(const char *text, size_t len, const char *lit)
{
    size_t n = strlen(lit);
    if (n > len)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (ascii_lower(text[i]) != lit[i])
            return 0;
    return n;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t';
}

static int is_eol(char c)
{
    return c == '\n' || c == '\r';
}

static int is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_';
}

/* The patterns. Each returns how many bytes at `text` belong to the key part
 * (kept) or 0 when the pattern does not start here; the caller then hides
 * the value that follows, up to the pattern's own end rule. */

/* A quote, plain or backslash-escaped (a JSON text inside a string):
 * its length at text, 0 when none. */
static size_t quote_at(const char *text, size_t len, size_t i)
{
    if (i < len && (text[i] == '"' || text[i] == '\''))
        return 1;
    if (i + 1 < len && text[i] == '\\' && (text[i + 1] == '"' || text[i + 1] == '\''))
        return 2;
    return 0;
}

/* `name` (any case), an optional closing quote (a quoted map key), blanks,
 * then one of `seps`: the length up to and including the separator, 0 when
 * the text does not start so. */
static size_t key_name(const char *text, size_t len, const char *name, const char *seps)
{
    size_t i = starts_with_ci(text, len, name);
    if (!i)
        return 0;
    i += quote_at(text, len, i);
    while (i < len && is_space(text[i]))
        i++;
    return i < len && text[i] && strchr(seps, text[i]) ? i + 1 : 0;
}

/* `X-API-Key:` as a header line, or as a quoted key in a printed map
 * (`"x-api-key": ...`, also `\"x-api-key\": ...`): the value is the rest of
 * the line. */
static size_t header_key(const char *text, size_t len)
{
    return key_name(text, len, "x-api-key", ":");
}

/* `api_key` as a name: `api_key=` in a query or form, `api_key='...'` as
 * a keyword argument, `"api_key": "..."` in JSON or a Python dict (also
 * with escaped quotes, a JSON text inside a string), `api_key: ...`. */
static size_t api_key_name(const char *text, size_t len)
{
    return key_name(text, len, "api_key", "=:");
}

/* `BAND_API_KEY=`, `BAND_API_KEY_USER=` (and any other BAND_API_KEY*
 * variable, e.g. BAND_API_KEY_USER_2) in env files and shell traces. */
static size_t assignment_key(const char *text, size_t len)
{
    size_t i = starts_with_ci(text, len, "band_api_key");
    if (!i)
        return 0;
    while (i < len && is_name_char(text[i]))
        i++;
    while (i < len && is_space(text[i]))
        i++;
    return i < len && text[i] == '=' ? i + 1 : 0;
}

static size_t skip_spaces(const char *text, size_t len, size_t i)
{
    while (i < len && is_space(text[i]))
        i++;
    return i;
}

static size_t header_value_end(const char *text, size_t len, size_t i)
{
    while (i < len && !is_eol(text[i]))
        i++;
    return i;
}

/* A bare value ends at `&` (the next query parameter), a quote or
 * whitespace; after a colon (`api_key: v, ...`) also at `,`, `}` or `)`. */
static size_t bare_value_end(const char *text, size_t len, size_t i, int after_colon)
{
    while (i < len && text[i] != '&' && text[i] != '"' && text[i] != '\'' &&
           !(after_colon && (text[i] == ',' || text[i] == '}' || text[i] == ')')) &&
           !is_space(text[i]) && !is_eol(text[i]))
        i++;
    return i;
}

/* A quoted value (its opening quote of qlen bytes at i) runs to the same
 * quote, escape pairs inside skipped; the line end stops it anyway. Returns
 * where the closing quote starts. */
static size_t quoted_value_end(const char *text, size_t len, size_t i, size_t qlen)
{
    char quote = text[i + qlen - 1];
    for (i += qlen; i < len && !is_eol(text[i]); i++) {
        if (qlen == 2 && text[i] == '\\' && i + 1 < len && text[i + 1] == quote)
            return i;
        if (qlen == 1 && text[i] == '\\') {
            i++; /* an escaped character, the quote included */
            continue;
        }
        if (qlen == 1 && text[i] == quote)
            return i;
    }
    return i;
}

/* A quoted value runs to its closing quote (keys have no spaces, but a
 * quoted one must not leak past a space either); a bare one to whitespace. */
static size_t assignment_value_end(const char *text, size_t len, size_t i)
{
    if (i < len && (text[i] == '"' || text[i] == '\'')) {
        char quote = text[i];
        for (i++; i < len && !is_eol(text[i]); i++)
            if (text[i] == quote)
                return i;
        return i;
    }
    while (i < len && !is_space(text[i]) && !is_eol(text[i]))
        i++;
    return i;
}

static void hide_range(unsigned char *hide, size_t from, size_t to)
{
    if (to > from)
        memset(hide + from, 1, to - from);
}

static void mark_patterns(const char *text, size_t len, unsigned char *hide)
{
    for (size_t i = 0; i < len; i++) {
        /* every pattern starts with one of these letters: skip the rest fast */
        char c = ascii_lower(text[i]);
        if (c != 'x' && c != 'a' && c != 'b')
            continue;
        const char *at = text + i;
        size_t left = len - i, key, v;
        if ((key = header_key(at, left)) != 0) {
            v = skip_spaces(at, left, key);
            hide_range(hide, i + v, i + header_value_end(at, left, v));
        } else if ((key = api_key_name(at, left)) != 0) {
            int colon = at[key - 1] == ':';
            v = colon ? skip_spaces(at, left, key) : key;
            size_t q = quote_at(at, left, v);
            if (q)
                hide_range(hide, i + v + q, i + quoted_value_end(at, left, v, q));
            else
                hide_range(hide, i + v, i + bare_value_end(at, left, v, colon));
        } else if ((key = assignment_key(at, left)) != 0) {
            v = skip_spaces(at, left, key);
            size_t end = assignment_value_end(at, left, v);
            if (v < end && (at[v] == '"' || at[v] == '\''))
                v++; /* keep the opening quote, hide what it encloses */
            hide_range(hide, i + v, i + end);
        }
    }
}

/* The map of bytes to hide, or NULL when out of memory. */
static unsigned char *hide_map(const char *text, size_t len)
{
    unsigned char *hide = calloc(len + 1, 1);
    if (!hide)
        return NULL;
    mark_secrets(text, len, hide);
    mark_patterns(text, len, hide);
    return hide;
}

/* ---- writing the result ------------------------------------------------ */

/* Appends piece to out (cap bytes) as far as it fits; `used` is the length
 * the text would have without a cap. */
static void put(char *out, size_t cap, size_t used, const char *piece, size_t len)
{
    if (used + 1 >= cap)
        return;
    size_t room = cap - 1 - used;
    memcpy(out + used, piece, len < room ? len : room);
}

/* snprintf-like: writes at most cap - 1 bytes plus a NUL when cap > 0, and
 * returns the length the whole redacted text needs. */
static size_t emit(const char *text, size_t len, const unsigned char *hide,
                   char *out, size_t cap)
{
    static const char mask[] = REDACT_MASK;
    size_t need = 0;
    for (size_t i = 0; i < len;) {
        if (hide[i]) {
            while (i < len && hide[i])
                i++;
            put(out, cap, need, mask, sizeof mask - 1);
            need += sizeof mask - 1;
        } else {
            const unsigned char *next = memchr(hide + i, 1, len - i);
            size_t run = next ? (size_t)(next - hide) - i : len - i;
            put(out, cap, need, text + i, run);
            need += run;
            i += run;
        }
    }
    if (cap > 0)
        out[need < cap ? need : cap - 1] = '\0';
    return need;
}

char *redact_str(const char *text)
{
    if (!text)
        text = "";
    size_t len = strlen(text);
    unsigned char *hide = hide_map(text, len);
    if (!hide)
        return NULL;
    size_t need = emit(text, len, hide, NULL, 0);
    char *out = malloc(need + 1);
    if (out)
        emit(text, len, hide, out, need + 1);
    free(hide);
    return out;
}

void redact_into(const char *text, char *out, size_t cap)
{
    if (!out || cap == 0)
        return;
    if (!text)
        text = "";
    size_t len = strlen(text);
    unsigned char *hide = hide_map(text, len);
    if (!hide) {
        /* cannot tell what is secret: fail closed rather than copy clear text */
        snprintf(out, cap, "%s", REDACT_MASK);
        return;
    }
    emit(text, len, hide, out, cap);
    free(hide);
}

int redact_has_secret(const char *text, size_t len)
{
    if (!text)
        return 0;
    for (size_t s = 0; s < registry.count; s++)
        for (int f = 0; f < FORM__COUNT; f++)
            if (registry.form[s][f] && find(text, len, registry.form[s][f], registry.len[s][f]))
                return 1;
    return 0;
}

/* vsnprintf into a buffer that grows to whatever the text needs. */
static char *format_alloc(const char *fmt, va_list ap)
{
    char small[1024];
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    char *text = NULL;
    if (n >= 0)
        text = malloc((size_t)n + 1);
    if (text) {
        if ((size_t)n < sizeof small)
            memcpy(text, small, (size_t)n + 1);
        else
            vsnprintf(text, (size_t)n + 1, fmt, again);
    }
    va_end(again);
    return text;
}

int redact_fprintf(FILE *fp, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *raw = format_alloc(fmt, ap);
    va_end(ap);
    if (!raw)
        return EOF;
    char *clean = redact_str(raw);
    memset(raw, 0, strlen(raw));
    free(raw);
    if (!clean)
        return EOF;
    int rc = fputs(clean, fp);
    free(clean);
    return rc;
}
