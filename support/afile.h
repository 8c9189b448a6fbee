/* afile: files written whole or not at all.
 *
 * The run state, the reports and the files the suite puts into a sandbox
 * workspace are all replaced the same way: a temp file in the same folder
 * (so the rename never crosses file systems), the mode set explicitly
 * (whatever the umask), every byte written, fsync, rename over the target,
 * then fsync of the folder. A reader sees the old file or the new one,
 * never half of one, and a failure leaves no temp file behind.
 *
 * Temp files are named `.<name>.tmp.XXXXXX` beside their target, so a
 * caller that knows a writer may have died mid-save can find and sweep
 * them (state_lock does).
 */
#ifndef SMOKE_AFILE_H
#define SMOKE_AFILE_H

#include <stddef.h>
#include <sys/types.h>

#include "err.h"

/* Writes all n bytes to fd, resuming after EINTR and short writes.
 * ERR_IO (errno tells why) when a write fails or makes no progress. */
err_code afile_write_all(int fd, const char *data, size_t n);

/* A complete, synced copy of text at dir/.<name>.tmp.XXXXXX with `mode`;
 * its path goes to tmp (cap bytes). The caller renames or links it into
 * place, or unlinks it. ERR_IO naming the file; nothing left on failure. */
err_code afile_write_temp(const char *dir, const char *name, const char *text, mode_t mode,
                          char *tmp, size_t cap, char *err);

/* Replaces dir/name with text, mode `mode`, atomically (see above).
 * ERR_USAGE when the path does not fit, ERR_IO naming the file. */
err_code afile_replace(const char *dir, const char *name, const char *text, mode_t mode,
                       char *err);

/* Makes a rename or link in dir durable. Best effort: the rename is
 * atomic already, and some file systems refuse fsync on a folder. */
void afile_sync_dir(const char *dir);

#endif
