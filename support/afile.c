#include "afile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define AFILE_PATH_SZ 4096

err_code afile_write_all(int fd, const char *data, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, data, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return ERR_IO;
        }
        data += w;
        n -= (size_t)w;
    }
    return ERR_OK;
}

err_code afile_write_temp(const char *dir, const char *name, const char *text, mode_t mode,
                          char *tmp, size_t cap, char *err)
{
    int n = snprintf(tmp, cap, "%s/.%s.tmp.XXXXXX", dir, name);
    if (n < 0 || (size_t)n >= cap)
        return err_set(err, ERR_USAGE, "path too long for a file in %s", dir);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return err_set(err, ERR_IO, "cannot create a temp file in %s: %s", dir, strerror(errno));
    /* mkstemp makes 0600 cut by the umask: set the mode the file must have. */
    int failed = fchmod(fd, mode) != 0 || afile_write_all(fd, text, strlen(text)) != ERR_OK ||
                 fsync(fd) != 0;
    int saved = errno;
    if (close(fd) != 0 && !failed) {
        failed = 1;
        saved = errno;
    }
    if (failed) {
        unlink(tmp);
        return err_set(err, ERR_IO, "cannot write %s: %s", tmp, strerror(saved));
    }
    return ERR_OK;
}

void afile_sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

err_code afile_replace(const char *dir, const char *name, const char *text, mode_t mode,
                       char *err)
{
    char path[AFILE_PATH_SZ], tmp[AFILE_PATH_SZ];
    int n = snprintf(path, sizeof path, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= sizeof path)
        return err_set(err, ERR_USAGE, "path too long for %s in %s", name, dir);
    err_code rc = afile_write_temp(dir, name, text, mode, tmp, sizeof tmp, err);
    if (rc != ERR_OK)
        return rc;
    if (rename(tmp, path) != 0) {
        rc = err_set(err, ERR_IO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        unlink(tmp);
        return rc;
    }
    afile_sync_dir(dir);
    return ERR_OK;
}
