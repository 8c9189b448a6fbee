/* fsbx: see fsbx.h. */
#include "fsbx.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The folder part of path into out ("/a/b/sbx" -> "/a/b"). */
static void dirname_into(const char *path, char *out, size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(out, cap, ".");
        return;
    }
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    snprintf(out, cap, "%.*s", (int)n, path);
}

/* Where this executable is: argv[0] itself when it holds a '/', else the
 * first match on PATH, as the shell found it. */
static err_code locate_self(const char *argv0, char *out, char *err)
{
    char candidate[PATH_MAX];
    if (strchr(argv0, '/')) {
        if (realpath(argv0, out))
            return ERR_OK;
        return err_set(err, ERR_NOTFOUND, "cannot resolve %s: %s", argv0, strerror(errno));
    }
    const char *path = getenv("PATH");
    for (const char *dir = path ? path : ""; *dir;) {
        const char *end = strchr(dir, ':');
        size_t len = end ? (size_t)(end - dir) : strlen(dir);
        int n = snprintf(candidate, sizeof candidate, "%.*s/%s", (int)len, dir, argv0);
        if (len > 0 && n > 0 && (size_t)n < sizeof candidate && access(candidate, X_OK) == 0 &&
            realpath(candidate, out))
            return ERR_OK;
        if (!end)
            break;
        dir = end + 1;
    }
    return err_set(err, ERR_NOTFOUND, "cannot find %s on PATH", argv0);
}

static err_code join(char *out, size_t cap, const char *dir, const char *name, char *err)
{
    int n = snprintf(out, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= cap)
        return err_set(err, ERR_USAGE, "path %s/%s is too long", dir, name);
    return ERR_OK;
}

err_code fsbx_init(fsbx *f, const char *argv0, char *err)
{
    memset(f, 0, sizeof *f);
    const char *state = getenv("FAKE_SBX_STATE");
    struct stat st;
    if (!state || !*state)
        return err_set(err, ERR_CONFIG, "FAKE_SBX_STATE is not set: the fake sbx keeps its state "
                                        "only in a folder a test gives it");
    if (stat(state, &st) != 0 || !S_ISDIR(st.st_mode))
        return err_set(err, ERR_CONFIG, "FAKE_SBX_STATE=%s is not a folder", state);
    if (!realpath(state, f->state))
        return err_set(err, ERR_CONFIG, "cannot resolve FAKE_SBX_STATE=%s", state);
    err_code rc = locate_self(argv0, f->self, err);
    if (rc != ERR_OK)
        return rc;
    dirname_into(f->self, f->bin_dir, sizeof f->bin_dir);
    rc = join(f->sock, sizeof f->sock, f->state, "sandboxd.sock", err);
    if (rc == ERR_OK)
        rc = join(f->log, sizeof f->log, f->state, "daemon.log", err);
    f->banner_stdout = fsbx_flag("FAKE_SBX_BANNER_STDOUT");
    return rc;
}

int fsbx_flag(const char *name)
{
    const char *v = getenv(name);
    return v && strcmp(v, "1") == 0;
}

int fsbx_fail(const char *hint, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("ERROR: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (hint)
        fprintf(stderr, "\n%s\n", hint);
    return 1;
}

int fsbx_no_sandbox(const char *name)
{
    return fsbx_fail("To create one:\n  sbx create AGENT WORKSPACE", "no sandbox named '%s'", name);
}

int fsbx_valid_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n >= FSBX_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '.' || c == '+';
        if (!ok)
            return 0;
    }
    return strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

err_code fsbx_home(const fsbx *f, const char *name, char *buf, size_t cap, char *err)
{
    int n = snprintf(buf, cap, "%s/sandboxes/%s/home", f->state, name);
    if (n < 0 || (size_t)n >= cap)
        return err_set(err, ERR_USAGE, "sandbox home path is too long");
    return ERR_OK;
}

static int mkdir_one(const char *path)
{
    return mkdir(path, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

err_code fsbx_make_home(const fsbx *f, const char *name, char *err)
{
    char path[PATH_MAX];
    err_code rc = fsbx_home(f, name, path, sizeof path, err);
    if (rc != ERR_OK)
        return rc;
    /* Each '/' after the state folder ends one level to create. */
    for (char *p = path + strlen(f->state) + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char saved = *p;
            *p = '\0';
            if (mkdir_one(path) != 0)
                return err_set(err, ERR_IO, "cannot create %s: %s", path, strerror(errno));
            *p = saved;
            if (!saved)
                return ERR_OK;
        }
    }
}

static void rmtree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (!S_ISDIR(st.st_mode)) {
        unlink(path);
        return;
    }
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char child[PATH_MAX];
            int n = snprintf(child, sizeof child, "%s/%s", path, e->d_name);
            if (n > 0 && (size_t)n < sizeof child)
                rmtree(child);
        }
        closedir(d);
    }
    rmdir(path);
}

void fsbx_remove_sandbox_dir(const fsbx *f, const char *name)
{
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/sandboxes/%s", f->state, name);
    /* The name was validated at create, so it never climbs out. */
    if (n > 0 && (size_t)n < sizeof path && fsbx_valid_name(name))
        rmtree(path);
}

void fsbx_now_rfc3339(char *buf, size_t cap)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    time_t secs = ts.tv_sec;
    gmtime_r(&secs, &tm);
    char day[32];
    strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, cap, "%s.%06ldZ", day, ts.tv_nsec / 1000);
}

void fsbx_uuid(char out[37])
{
    unsigned char b[16];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ssize_t got = fd >= 0 ? read(fd, b, sizeof b) : -1;
    if (fd >= 0)
        close(fd);
    if (got != (ssize_t)sizeof b) {
        /* Uniqueness within one test is all the fake needs. */
        unsigned long seed = (unsigned long)time(NULL) ^ (unsigned long)getpid();
        for (size_t i = 0; i < sizeof b; i++) {
            seed = seed * 1103515245u + 12345u;
            b[i] = (unsigned char)(seed >> 16);
        }
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
             b[13], b[14], b[15]);
}

static void indent(FILE *out, int depth)
{
    for (int i = 0; i < depth; i++)
        fputs("  ", out);
}

static void print_scalar(FILE *out, const cJSON *item)
{
    char *text = cJSON_PrintUnformatted(item);
    fputs(text ? text : "null", out);
    free(text);
}

static void print_value(FILE *out, const cJSON *item, int depth)
{
    int is_obj = cJSON_IsObject(item);
    if (!is_obj && !cJSON_IsArray(item)) {
        print_scalar(out, item);
        return;
    }
    if (!item->child) {
        fputs(is_obj ? "{}" : "[]", out);
        return;
    }
    fputs(is_obj ? "{\n" : "[\n", out);
    for (const cJSON *c = item->child; c; c = c->next) {
        indent(out, depth + 1);
        if (is_obj) {
            cJSON *key = cJSON_CreateString(c->string ? c->string : "");
            print_scalar(out, key);
            cJSON_Delete(key);
            fputs(": ", out);
        }
        print_value(out, c, depth + 1);
        fputs(c->next ? ",\n" : "\n", out);
    }
    indent(out, depth);
    fputc(is_obj ? '}' : ']', out);
}

void fsbx_print_json(FILE *out, const cJSON *item)
{
    print_value(out, item, 0);
    fputc('\n', out);
}

void fsbx_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}
