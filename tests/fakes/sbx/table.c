/* table: see table.h. */
#include "table.h"

#include <stdlib.h>
#include <string.h>

#define GAP 3

int table_init(table *t, size_t ncols, const char *const *header)
{
    memset(t, 0, sizeof *t);
    if (ncols == 0 || ncols > TABLE_MAX_COLS)
        return -1;
    t->ncols = ncols;
    return table_add(t, header);
}

int table_add(table *t, const char *const *row)
{
    char **grown = realloc(t->cells, (t->nrows + 1) * t->ncols * sizeof *grown);
    if (!grown)
        return -1;
    t->cells = grown;
    char **dst = t->cells + t->nrows * t->ncols;
    for (size_t c = 0; c < t->ncols; c++)
        dst[c] = strdup(row[c] ? row[c] : "");
    t->nrows++;
    for (size_t c = 0; c < t->ncols; c++)
        if (!dst[c])
            return -1;
    return 0;
}

void table_print(const table *t, FILE *out)
{
    size_t width[TABLE_MAX_COLS] = {0};
    for (size_t r = 0; r < t->nrows; r++)
        for (size_t c = 0; c < t->ncols; c++) {
            size_t w = strlen(t->cells[r * t->ncols + c]);
            if (w > width[c])
                width[c] = w;
        }
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t c = 0; c < t->ncols; c++) {
            const char *cell = t->cells[r * t->ncols + c];
            if (c + 1 == t->ncols)
                fprintf(out, "%s\n", cell);
            else
                fprintf(out, "%-*s", (int)(width[c] + GAP), cell);
        }
    }
}

void table_free(table *t)
{
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof *t);
}
