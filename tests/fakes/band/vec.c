#include "vec.h"

#include <stdlib.h>
#include <string.h>

void vec_push(vec *v, void *p)
{
    if (v->len == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 8;
        void **items = realloc(v->items, cap * sizeof *items);
        if (!items)
            abort();
        v->items = items;
        v->cap = cap;
    }
    v->items[v->len++] = p;
}

int vec_remove(vec *v, const void *p)
{
    for (size_t i = 0; i < v->len; i++) {
        if (v->items[i] == p) {
            memmove(&v->items[i], &v->items[i + 1], (v->len - i - 1) * sizeof *v->items);
            v->len--;
            return 1;
        }
    }
    return 0;
}

void vec_release(vec *v)
{
    free(v->items);
    v->items = NULL;
    v->len = v->cap = 0;
}
