/* band_http and a stalled Band (issue 9 finding 8): a server that takes
 * the connection and never answers must not give the operator silence.
 * Every exchange that lasts over 2 s shows its progress like any other
 * wait (progress.h), through curl's transfer-progress hook. */
#include "band_http.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tk.h"
#include "tk_net.h"

static void test_stalled_server_shows_progress(void)
{
    static const char *const proxies[] = {"http_proxy", "HTTP_PROXY", "https_proxy",
                                          "HTTPS_PROXY", "all_proxy", "ALL_PROXY", NULL};
    for (int i = 0; proxies[i]; i++)
        unsetenv(proxies[i]);
    /* A listener that never accepts: the kernel completes the connection
     * from its backlog, and then nothing is ever said. */
    int port = 0, srv = tk_listen_loopback(&port);
    char base[64];
    snprintf(base, sizeof base, "http://127.0.0.1:%d", port);
    band_http_setup setup = {"stall-key-0123456789", NULL, NULL, 1000};
    band_http *h = NULL;
    char err[ERR_BUFSZ];
    if (!UNIT_CHECK(band_http_new(base, &setup, &h, err) == ERR_OK, "new: %s", err)) {
        close(srv);
        return;
    }
    char *dir = tk_tmpdir("stall");
    char *out_path = tk_path(dir, "stdout");
    fflush(stdout);
    int saved = dup(1);
    FILE *capture = fopen(out_path, "w");
    if (!capture || saved < 0 || dup2(fileno(capture), 1) < 0)
        abort();
    band_http_request rq = {.method = "GET", .path = "/api/v1/agents/me", .timeout_ms = 3500,
                            .repeatable = 1};
    band_http_response resp;
    err_code rc = band_http_send(h, &rq, &resp, err);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    fclose(capture);
    char *shown = tk_read(out_path, NULL);
    UNIT_CHECK(rc == ERR_TIMEOUT, "rc %d: %s", rc, err);
    UNIT_CHECK(resp.elapsed_ms >= 3000, "the stall lasted only %lld ms",
               (long long)resp.elapsed_ms);
    UNIT_CHECK(shown && strstr(shown, "waiting for") && strstr(shown, "/api/v1/agents/me"),
               "%lld ms of silence; the operator saw: '%s'", (long long)resp.elapsed_ms,
               shown ? shown : "");
    UNIT_CHECK(shown && !strstr(shown, "stall-key-0123456789"), "the key was shown");
    printf("\n    what a stalled Band showed: %s", shown ? shown : "");
    free(shown);
    band_http_free(h);
    close(srv);
    tk_rmtree(dir);
    free(dir);
    free(out_path);
}

const unit_case unit_cases[] = {
    {"stalled_server_shows_progress", test_stalled_server_shows_progress},
    {NULL, NULL},
};
