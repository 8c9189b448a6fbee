#include "tk.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *xstrdup(const char *s)
{
    char *d = strdup(s);
    if (!d)
        abort();
    return d;
}

char *tk_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (!p)
        abort();
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

char *tk_tmpdir(const char *tag)
{
    const char *base = getenv("TMPDIR");
    char tmpl[1024];
    snprintf(tmpl, sizeof tmpl, "%s/band-smoke-%s-XXXXXX",
             base && *base ? base : "/tmp", tag);
    if (!mkdtemp(tmpl))
        abort();
    return xstrdup(tmpl);
}

static void rmtree_inner(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d)) != NULL) {
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                    continue;
                char *child = tk_path(path, e->d_name);
                rmtree_inner(child);
                free(child);
            }
            closedir(d);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}

void tk_rmtree(const char *path)
{
    if (!path || strlen(path) < 8 || !strstr(path, "band-smoke-"))
        abort(); /* only ever remove what tk_tmpdir made */
    rmtree_inner(path);
}

char *tk_read(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        abort();
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, fp)) > 0) {
        n += got;
        if (cap - n - 1 == 0) {
            cap *= 2;
            buf = realloc(buf, cap);
            if (!buf)
                abort();
        }
    }
    fclose(fp);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

void tk_write(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        abort();
    size_t len = strlen(text), off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w <= 0)
            abort();
        off += (size_t)w;
    }
    close(fd);
}

char *tk_bin(const char *name)
{
    const char *dir = getenv("SMOKE_TEST_BIN");
    return tk_path(dir && *dir ? dir : SMOKE_BINARY_DIR "/tests/bin", name);
}
