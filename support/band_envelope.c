#include "band_envelope.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redact.h"

#define EXCERPT_SZ 160

/* A printable, redacted, cut copy of `text` for an error message. The
 * whole text is redacted before the cut, so a cut can never leave the
 * front of a secret unmasked, and before control bytes become spaces, so
 * a secret holding one still matches the registry. */
static void excerpt(const char *text, size_t len, char *out, size_t cap)
{
    char *clean = malloc(len + 1);
    char *masked = NULL;
    if (clean) {
        for (size_t i = 0; i < len; i++)
            clean[i] = text[i] ? text[i] : ' '; /* a NUL would cut the text short */
        clean[len] = '\0';
        masked = redact_str(clean);
        OPENSSL_cleanse(clean, len);
        free(clean);
    }
    if (!masked) {
        snprintf(out, cap, "[unavailable]");
        return;
    }
    for (char *p = masked; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
    size_t n = strlen(masked);
    if (n < cap) {
        memcpy(out, masked, n + 1);
    } else {
        memcpy(out, masked, cap - 4);
        memcpy(out + cap - 4, "...", 4);
    }
    free(masked);
}

static void text_field(const cJSON *obj, const char *name, char *out, size_t cap)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (cJSON_IsString(v))
        excerpt(v->valuestring, strlen(v->valuestring), out, cap);
    else
        out[0] = '\0';
}

static err_code error_envelope(band_envelope *out, const cJSON *e, char *err)
{
    char message[EXCERPT_SZ], details[EXCERPT_SZ] = "";
    text_field(e, "code", out->code, sizeof out->code);
    text_field(e, "request_id", out->request_id, sizeof out->request_id);
    text_field(e, "message", message, sizeof message);
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(e, "details");
    char *printed = d && !cJSON_IsNull(d) ? cJSON_PrintUnformatted(d) : NULL;
    if (printed) {
        excerpt(printed, strlen(printed), details, sizeof details);
        free(printed);
    }
    const char *rid = out->request_id;
    return err_set(err, ERR_HTTP, "HTTP %ld%s%s: %s%s%s%s%s%s", out->status,
                   out->code[0] ? " " : "", out->code, message[0] ? message : "(no message)",
                   details[0] ? " " : "", details, rid[0] ? " (request_id " : "", rid,
                   rid[0] ? ")" : "");
}

static err_code error_body(band_envelope *out, const char *body, size_t len, char *err)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(out->root, "error");
    if (cJSON_IsObject(e))
        return error_envelope(out, e, err);
    if (len == 0)
        return err_set(err, ERR_HTTP, "HTTP %ld (empty body)", out->status);
    char text[EXCERPT_SZ];
    excerpt(body, len, text, sizeof text);
    return err_set(err, ERR_HTTP, "HTTP %ld: %s", out->status, text);
}

static err_code success_body(band_envelope *out, size_t len, char *err)
{
    const cJSON *root = out->root;
    if (len == 0)
        return err_set(err, ERR_PROTOCOL, "HTTP %ld with an empty body", out->status);
    if (!cJSON_IsObject(root))
        return err_set(err, ERR_PROTOCOL, "HTTP %ld: the body (%zu bytes) is not a JSON object",
                       out->status, len);
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(root, "data");
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "metadata");
    if (!data)
        return err_set(err, ERR_PROTOCOL, "HTTP %ld: the body has no \"data\"", out->status);
    if (meta && !cJSON_IsNull(meta) && !cJSON_IsObject(meta))
        return err_set(err, ERR_PROTOCOL, "HTTP %ld: \"metadata\" is not an object", out->status);
    out->data = data;
    out->metadata = cJSON_IsObject(meta) ? meta : NULL;
    return ERR_OK;
}

/* cJSON reads a NUL-terminated copy: the body may lack the NUL, and a NUL
 * inside it would let cJSON stop early on a prefix. */
static err_code parse_json(const char *body, size_t len, cJSON **root, char *err)
{
    *root = NULL;
    if (len == 0 || memchr(body, '\0', len))
        return ERR_OK;
    char *copy = malloc(len + 1);
    if (!copy)
        return err_set(err, ERR_NOMEM, "out of memory reading a %zu-byte body", len);
    memcpy(copy, body, len);
    copy[len] = '\0';
    *root = cJSON_ParseWithOpts(copy, NULL, 1);
    OPENSSL_cleanse(copy, len);
    free(copy);
    return ERR_OK;
}

err_code band_envelope_parse(long status, const char *body, size_t len,
                             band_envelope *out, char *err)
{
    if (!out)
        return err_set(err, ERR_USAGE, "band_envelope_parse: missing output");
    memset(out, 0, sizeof *out);
    out->status = status;
    if (!body)
        len = 0;
    if (status < 100 || status > 599)
        return err_set(err, ERR_PROTOCOL, "invalid HTTP status %ld", status);
    if (status == 204) {
        out->no_content = 1;
        return ERR_OK;
    }
    err_code rc = parse_json(body, len, &out->root, err);
    if (rc != ERR_OK)
        return rc;
    if (status >= 200 && status <= 299)
        return success_body(out, len, err);
    return error_body(out, body, len, err);
}

void band_envelope_free(band_envelope *env)
{
    if (!env)
        return;
    cJSON_Delete(env->root);
    memset(env, 0, sizeof *env);
}
