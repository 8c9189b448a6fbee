/* url: the small pieces of URL text every module that reads one needs.
 *
 * config (Band endpoints), netenv (proxy variables) and phx_url (the
 * WebSocket address) each cut URLs their own way, because each tolerates
 * different oddities; what a port number is they agree on, here.
 */
#ifndef SMOKE_URL_H
#define SMOKE_URL_H

#include <stddef.h>

/* The n characters at p as a TCP port, 1..65535: decimal digits only, no
 * sign, no blanks, at most 5 of them. 0 with *out set, or -1. */
int url_parse_port(const char *p, size_t n, int *out);

#endif
