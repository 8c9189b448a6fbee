/* table: sbx's column tables (`ls`, `policy log`, `policy ls`): cells
 * padded to the widest in their column, three spaces apart, the last
 * column unpadded. Widths count bytes, which is right for the ASCII the
 * fake prints. */
#ifndef FSBX_TABLE_H
#define FSBX_TABLE_H

#include <stddef.h>
#include <stdio.h>

#define TABLE_MAX_COLS 8

typedef struct table {
    size_t ncols;
    char **cells; /* row-major, malloc'd copies; row 0 is the header */
    size_t nrows;
} table;

/* A table with the header row (ncols cells, at most TABLE_MAX_COLS). -1 out of memory. */
int table_init(table *t, size_t ncols, const char *const *header);

/* Appends a row of ncols cells (copied; NULL prints as empty). -1 out of memory. */
int table_add(table *t, const char *const *row);

void table_print(const table *t, FILE *out);
void table_free(table *t);

#endif
