/* phx_frame: the Phoenix Channels v2 wire codec, pure and fuzzable.
 *
 * Every WebSocket text frame of protocol v2 is one JSON array
 * `[join_ref, ref, topic, event, payload]` (band-protocol.md section 5.2):
 * join_ref and ref are strings or null, topic and event non-empty strings,
 * payload an object. A payload that is not an object is read as `{}`, as
 * the Python client does; anything else malformed is ERR_PROTOCOL.
 *
 * No I/O, no globals, no lws: phoenix.c feeds it what the socket delivers,
 * and a fuzzer can feed it anything. Decoding never crashes and never
 * leaks, whatever the input (bounded by PHX_FRAME_MAX bytes and cJSON's
 * nesting limit).
 */
#ifndef SMOKE_PHX_FRAME_H
#define SMOKE_PHX_FRAME_H

#include <stddef.h>

#include <cJSON.h>

#include "err.h"

/* Largest frame accepted, the Python client's (websockets') default. */
#define PHX_FRAME_MAX (1024 * 1024)

/* A decoded frame. Every pointer points into `root`, which the frame owns:
 * they stay valid until phx_frame_clear. */
typedef struct phx_frame {
    const char *join_ref; /* NULL when the frame holds null */
    const char *ref;      /* NULL when the frame holds null */
    const char *topic;    /* never NULL, never "" */
    const char *event;    /* never NULL, never "" */
    const cJSON *payload; /* always an object */
    cJSON *root;          /* owner; NULL after clear */
} phx_frame;

/* Decodes `len` bytes of `text` (need not be NUL-terminated). On ERR_OK
 * *out owns a parse tree to release with phx_frame_clear. On failure *out
 * is left empty (clearing it is harmless) and err says what was wrong
 * without quoting the input: ERR_PROTOCOL for anything that is not a v2
 * frame (not JSON, trailing bytes, not 5 elements, a number where a
 * string belongs, over PHX_FRAME_MAX), ERR_NOMEM, ERR_USAGE for NULLs. */
err_code phx_frame_decode(const char *text, size_t len, phx_frame *out, char *err);

/* Releases what decode allocated and empties the frame. NULL-safe. */
void phx_frame_clear(phx_frame *frame);

/* Encodes a frame into a malloc'd NUL-terminated string (*out; free()).
 * join_ref and ref may be NULL (written as null); topic and event must be
 * non-empty; payload NULL means `{}`, otherwise it must be an object and
 * is only read. ERR_USAGE for arguments that would make an invalid frame,
 * ERR_NOMEM. *out is NULL on failure. */
err_code phx_frame_encode(const char *join_ref, const char *ref, const char *topic,
                          const char *event, const cJSON *payload, char **out,
                          char *err);

#endif
