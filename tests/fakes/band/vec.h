/* vec: a growable array of pointers, the one container of the fake.
 *
 * The fake's tables (agents, rooms, participants, messages, sockets) are
 * small and scanned linearly; order of insertion is kept because several
 * answers depend on it ("oldest first"). A vec owns its array, never the
 * things it points to. Growth that runs out of memory aborts: a test double
 * that cannot allocate has nothing useful left to report.
 */
#ifndef FAKE_BAND_VEC_H
#define FAKE_BAND_VEC_H

#include <stddef.h>

typedef struct vec {
    void **items;
    size_t len;
    size_t cap;
} vec;

/* Appends p at the end. */
void vec_push(vec *v, void *p);

/* Removes the first slot holding p, keeping the order of the rest.
 * Returns 1 when p was there, 0 otherwise. */
int vec_remove(vec *v, const void *p);

/* Frees the array (not the items) and leaves an empty vec. */
void vec_release(vec *v);

#endif
