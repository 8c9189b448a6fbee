/* tk_tls: a throwaway certificate authority and a server certificate for
 * the offline TLS world (the fake Band's https/wss).
 *
 *   tk_tls t;
 *   if (tk_tls_make(dir, &t) != 0) ...   // or reuses what dir already holds
 *   ... fake-band --tls-cert t.cert --tls-key t.key; clients trust t.ca ...
 *
 * The CA (ca.pem) is self-signed, P-256, valid for a day, marked CA:TRUE
 * with keyCertSign. The server certificate (server.pem, key in server.key,
 * 0600) is signed by it for DNS:localhost and IP:127.0.0.1, serverAuth,
 * with the key identifiers strict verifiers (Python 3.13's
 * VERIFY_X509_STRICT) insist on. Nothing here is a secret worth keeping:
 * the files live in the caller's temp folder and go with it.
 *
 * Made once per folder: a second call on a folder that already holds the
 * three files only fills in the paths (the rehearsal and a test share one
 * set per run).
 */
#ifndef SMOKE_TK_TLS_H
#define SMOKE_TK_TLS_H

#define TK_TLS_PATH 1024 /* CONFIG_PATH_SZ: fits config.ca_file */

typedef struct tk_tls {
    char ca[TK_TLS_PATH];   /* PEM: the CA certificate clients add to their trust */
    char cert[TK_TLS_PATH]; /* PEM: the server certificate */
    char key[TK_TLS_PATH];  /* PEM: the server's private key (0600) */
} tk_tls;

/* Writes (or finds) the three files in dir. 0 on success, -1 with a line on
 * stderr when OpenSSL refuses or dir is too long for TK_TLS_PATH. */
int tk_tls_make(const char *dir, tk_tls *out);

#endif
