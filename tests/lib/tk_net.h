/* tk_net: loopback sockets for tests. */
#ifndef SMOKE_TK_NET_H
#define SMOKE_TK_NET_H

/* A TCP socket listening on 127.0.0.1 at a port the kernel picks (*port).
 * Aborts on failure, like the rest of the kit. */
int tk_listen_loopback(int *port);

#endif
