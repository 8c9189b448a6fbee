#include "phx_frame.h"

#include <stdlib.h>
#include <string.h>

/* A ref slot: null or a string. Numbers are refused on purpose: the server
 * echoes our refs as strings, so a number means a peer we do not speak to. */
static int read_ref(const cJSON *item, const char **out)
{
    if (cJSON_IsNull(item)) {
        *out = NULL;
        return 0;
    }
    if (!cJSON_IsString(item) || !item->valuestring)
        return -1;
    *out = item->valuestring;
    return 0;
}

static int read_name(const cJSON *item, const char **out)
{
    if (!cJSON_IsString(item) || !item->valuestring || !item->valuestring[0])
        return -1;
    *out = item->valuestring;
    return 0;
}

static int only_space(const char *p, const char *end)
{
    for (; p < end; p++)
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
            return 0;
    return 1;
}

/* Reads the five slots of a parsed array into f; -1 when one is wrong. */
static int read_slots(cJSON *root, phx_frame *f)
{
    if (!cJSON_IsArray(root) || cJSON_GetArraySize(root) != 5)
        return -1;
    cJSON *slot[5];
    int i = 0;
    for (cJSON *it = root->child; it && i < 5; it = it->next)
        slot[i++] = it;
    if (read_ref(slot[0], &f->join_ref) || read_ref(slot[1], &f->ref) ||
        read_name(slot[2], &f->topic) || read_name(slot[3], &f->event))
        return -1;
    f->payload = slot[4];
    return 0;
}

err_code phx_frame_decode(const char *text, size_t len, phx_frame *out, char *err)
{
    if (!out)
        return err_set(err, ERR_USAGE, "phx_frame_decode: NULL frame");
    memset(out, 0, sizeof *out);
    if (!text)
        return err_set(err, ERR_USAGE, "phx_frame_decode: NULL text");
    if (len > PHX_FRAME_MAX)
        return err_set(err, ERR_PROTOCOL, "frame of %zu bytes exceeds %d", len, PHX_FRAME_MAX);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root)
        return err_set(err, ERR_PROTOCOL, "frame is not JSON");
    if (!end || end < text || end > text + len || !only_space(end, text + len)) {
        cJSON_Delete(root);
        return err_set(err, ERR_PROTOCOL, "frame has bytes after the JSON value");
    }
    phx_frame f = {0};
    if (read_slots(root, &f) != 0) {
        cJSON_Delete(root);
        return err_set(err, ERR_PROTOCOL,
                       "frame is not [join_ref, ref, topic, event, payload]");
    }
    if (!cJSON_IsObject(f.payload)) {
        /* The Python client reads a non-object payload as {}; so do we. */
        cJSON *empty = cJSON_CreateObject();
        if (!empty || !cJSON_ReplaceItemInArray(root, 4, empty)) {
            cJSON_Delete(empty);
            cJSON_Delete(root);
            return err_set(err, ERR_NOMEM, "out of memory decoding a frame");
        }
        f.payload = empty;
    }
    f.root = root;
    *out = f;
    return ERR_OK;
}

void phx_frame_clear(phx_frame *frame)
{
    if (!frame)
        return;
    cJSON_Delete(frame->root);
    memset(frame, 0, sizeof *frame);
}

static cJSON *ref_item(const char *ref)
{
    return ref ? cJSON_CreateString(ref) : cJSON_CreateNull();
}

/* Builds the array; the payload is added by reference, so deleting the
 * array leaves the caller's object alone. NULL when out of memory. */
static cJSON *build(const char *join_ref, const char *ref, const char *topic,
                    const char *event, const cJSON *payload, cJSON *empty)
{
    cJSON *arr = cJSON_CreateArray();
    if (!arr)
        return NULL;
    cJSON *items[4] = {ref_item(join_ref), ref_item(ref), cJSON_CreateString(topic),
                       cJSON_CreateString(event)};
    int ok = 1;
    for (int i = 0; i < 4; i++) {
        if (!items[i] || !ok) {
            cJSON_Delete(items[i]);
            ok = 0;
            continue;
        }
        cJSON_AddItemToArray(arr, items[i]);
    }
    /* cJSON's API is not const-correct; a reference is only read. */
    if (!ok || !cJSON_AddItemReferenceToArray(arr, payload ? (cJSON *)payload : empty)) {
        cJSON_Delete(arr);
        return NULL;
    }
    return arr;
}

err_code phx_frame_encode(const char *join_ref, const char *ref, const char *topic,
                          const char *event, const cJSON *payload, char **out,
                          char *err)
{
    if (!out)
        return err_set(err, ERR_USAGE, "phx_frame_encode: NULL output");
    *out = NULL;
    if (!topic || !*topic || !event || !*event)
        return err_set(err, ERR_USAGE, "phx_frame_encode: topic and event must be non-empty");
    if (payload && !cJSON_IsObject(payload))
        return err_set(err, ERR_USAGE, "phx_frame_encode: payload must be an object");
    cJSON *empty = cJSON_CreateObject();
    cJSON *arr = empty ? build(join_ref, ref, topic, event, payload, empty) : NULL;
    char *text = arr ? cJSON_PrintUnformatted(arr) : NULL;
    /* a copy, so the caller frees with free() whatever cJSON's hooks are */
    *out = text ? strdup(text) : NULL;
    cJSON_free(text);
    cJSON_Delete(arr);
    cJSON_Delete(empty);
    return *out ? ERR_OK : err_set(err, ERR_NOMEM, "out of memory encoding a frame");
}
