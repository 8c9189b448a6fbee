#include "reply.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "ident.h"

static char *print(cJSON *doc)
{
    char *text = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    if (!text)
        abort();
    return text;
}

void reply_json(http_response *resp, int status, cJSON *doc)
{
    http_answer(resp, status, print(doc));
}

void reply_data(http_response *resp, int status, cJSON *data)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddItemToObject(doc, "data", data);
    reply_json(resp, status, doc);
}

void reply_list(http_response *resp, cJSON *items, cJSON *metadata)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddItemToObject(doc, "data", items);
    cJSON_AddItemToObject(doc, "metadata", metadata);
    reply_json(resp, 200, doc);
}

void reply_no_content(http_response *resp)
{
    http_answer(resp, 204, NULL);
}

char *reply_error_body(const char *code, const char *pointer, int with_details, const char *message)
{
    char request_id[IDENT_UUID_SZ];
    ident_uuid(request_id);
    cJSON *err = cJSON_CreateObject();
    cJSON_AddStringToObject(err, "code", code);
    cJSON_AddStringToObject(err, "message", message);
    cJSON_AddStringToObject(err, "request_id", request_id);
    if (with_details) {
        cJSON *details = cJSON_AddObjectToObject(err, "details");
        if (pointer && *pointer) {
            cJSON *list = cJSON_AddArrayToObject(details, pointer);
            cJSON_AddItemToArray(list, cJSON_CreateString(message));
        }
    }
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddItemToObject(doc, "error", err);
    return print(doc);
}

void reply_error(http_response *resp, int status, const char *code, const char *pointer,
                 const char *fmt, ...)
{
    char message[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    http_answer(resp, status, reply_error_body(code, pointer, status == 422, message));
}
