#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "evidence.h"
#include "junit.h"

const report_phase *report_phase_for_probe(const report_input *in, const char *label)
{
    for (size_t i = 0; label && i < in->nphases; i++)
        if (in->phases[i].probe_label && strcmp(in->phases[i].probe_label, label) == 0)
            return &in->phases[i];
    return NULL;
}

const report_phase *report_phase_named(const report_input *in, const char *name)
{
    for (size_t i = 0; name && i < in->nphases; i++)
        if (in->phases[i].name && strcmp(in->phases[i].name, name) == 0)
            return &in->phases[i];
    return NULL;
}

static err_code write_all(int fd, const char *text, const char *path, char *err)
{
    size_t len = strlen(text), off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return err_set(err, ERR_IO, "writing %s: %s", path,
                           w < 0 ? strerror(errno) : "no progress");
        off += (size_t)w;
    }
    return ERR_OK;
}

/* Temp file beside the target, so the rename never crosses file systems
 * and a reader sees either the old report or the new one. */
static err_code write_atomic(const char *dir, const char *name, const char *text, char *err)
{
    char path[4096], tmp[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path ||
        snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", dir, name) >= (int)sizeof tmp)
        return err_set(err, ERR_USAGE, "report folder path too long: %s", dir);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return err_set(err, ERR_IO, "creating a temp file for %s: %s", path, strerror(errno));
    err_code rc = ERR_OK;
    /* mkstemp's 0600 is still cut by the umask; the reports must be 0600. */
    if (fchmod(fd, 0600) != 0)
        rc = err_set(err, ERR_IO, "chmod %s: %s", tmp, strerror(errno));
    if (rc == ERR_OK)
        rc = write_all(fd, text, tmp, err);
    if (rc == ERR_OK && fsync(fd) != 0)
        rc = err_set(err, ERR_IO, "fsync %s: %s", tmp, strerror(errno));
    if (close(fd) != 0 && rc == ERR_OK)
        rc = err_set(err, ERR_IO, "closing %s: %s", tmp, strerror(errno));
    if (rc == ERR_OK && rename(tmp, path) != 0)
        rc = err_set(err, ERR_IO, "renaming %s to %s: %s", tmp, path, strerror(errno));
    if (rc != ERR_OK)
        unlink(tmp);
    return rc;
}

err_code report_write(const report_input *in, const char *dir, char *err)
{
    if (!in || !in->st || !dir)
        return err_set(err, ERR_USAGE, "report_write needs a state and a folder");
    char *md = evidence_render(in);
    char *xml = junit_render(in);
    err_code rc = ERR_OK;
    if (!md || !xml)
        rc = err_set(err, ERR_NOMEM, "out of memory rendering the reports");
    if (rc == ERR_OK)
        rc = write_atomic(dir, REPORT_EVIDENCE_FILE, md, err);
    if (rc == ERR_OK)
        rc = write_atomic(dir, REPORT_JUNIT_FILE, xml, err);
    free(md);
    free(xml);
    return rc;
}
