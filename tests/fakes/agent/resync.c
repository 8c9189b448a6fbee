#include "resync.h"

#include "band_rest.h"

#define MAX_PAGES 50

static err_code stopped(char *err)
{
    return err_set(err, ERR_WRONG_STATE, "stopped by a signal");
}

/* One page of the processing sweep; *pages gets the total. */
static err_code sweep_page(handler *h, const char *room_id, int page, int *pages,
                           const volatile sig_atomic_t *stop, char *err)
{
    band_message_page p;
    err_code rc = band_agent_list_processing(h->rest, room_id, page, &p, err);
    for (size_t i = 0; rc == ERR_OK && i < p.count; i++) {
        if (*stop)
            rc = stopped(err);
        else
            (void)handler_handle(h, room_id, &p.items[i]); /* outcomes are logged */
    }
    *pages = p.info.total_pages;
    band_message_page_free(&p);
    return rc;
}

static err_code sweep_processing(handler *h, const char *room_id,
                                 const volatile sig_atomic_t *stop, char *err)
{
    int total = 1;
    for (int page = 1; page <= total && page <= MAX_PAGES; page++) {
        err_code rc = sweep_page(h, room_id, page, &total, stop, err);
        if (rc != ERR_OK)
            return rc;
    }
    return ERR_OK;
}

err_code resync_next(handler *h, const char *room_id, const volatile sig_atomic_t *stop,
                     char *err)
{
    for (int n = 0; n < RESYNC_MAX_MESSAGES; n++) {
        if (*stop)
            return stopped(err);
        band_message m;
        int found = 0;
        err_code rc = band_agent_next_message(h->rest, room_id, &m, &found, err);
        int fresh = rc == ERR_OK && found && !handler_tried(h, m.id);
        /* a deferred message would be offered again at once */
        int again = fresh && handler_handle(h, room_id, &m) != HANDLER_DEFERRED;
        band_message_clear(&m);
        if (!again)
            return rc;
    }
    return ERR_OK;
}

err_code resync_room(handler *h, const char *room_id, const volatile sig_atomic_t *stop,
                     char *err)
{
    err_code rc = sweep_processing(h, room_id, stop, err);
    return rc == ERR_OK ? resync_next(h, room_id, stop, err) : rc;
}
