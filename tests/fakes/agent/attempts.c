#include "attempts.h"

#include <stdlib.h>
#include <string.h>

void attempts_init(attempts *a)
{
    memset(a, 0, sizeof *a);
}

void attempts_free(attempts *a)
{
    free(a->ids);
    attempts_init(a);
}

int attempts_contains(const attempts *a, const char *id)
{
    for (size_t i = 0; i < a->count; i++)
        if (strcmp(a->ids[i], id) == 0)
            return 1;
    return 0;
}

err_code attempts_add(attempts *a, const char *id, char *err)
{
    if (strlen(id) >= BAND_ID_SZ)
        return err_set(err, ERR_USAGE, "message id longer than %d bytes", BAND_ID_SZ - 1);
    if (attempts_contains(a, id))
        return ERR_OK;
    if (a->count == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 16;
        void *grown = realloc(a->ids, cap * sizeof *a->ids);
        if (!grown)
            return err_set(err, ERR_NOMEM, "out of memory remembering message %s", id);
        a->ids = grown;
        a->cap = cap;
    }
    memcpy(a->ids[a->count++], id, strlen(id) + 1);
    return ERR_OK;
}
