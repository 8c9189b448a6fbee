/* store: see store.h. */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsbx.h"
#include "platform.h"

#define LOCK_TICK_MS 5

static err_code path_in(const store *s, const char *name, char *out, size_t cap, char *err)
{
    int n = snprintf(out, cap, "%s/%s", s->dir, name);
    if (n < 0 || (size_t)n >= cap)
        return err_set(err, ERR_USAGE, "state path too long");
    return ERR_OK;
}

err_code store_lock(const char *dir, const char *name, int *fd, char *err)
{
    char path[4200];
    int n = snprintf(path, sizeof path, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= sizeof path)
        return err_set(err, ERR_USAGE, "state path too long");
    *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (*fd < 0)
        return err_set(err, ERR_IO, "cannot open %s: %s", path, strerror(errno));
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    for (int waited = 0; waited < STORE_LOCK_WAIT_MS; waited += LOCK_TICK_MS) {
        if (fcntl(*fd, F_SETLK, &fl) == 0)
            return ERR_OK;
        if (errno != EACCES && errno != EAGAIN && errno != EINTR)
            break;
        fsbx_sleep_ms(LOCK_TICK_MS);
    }
    close(*fd);
    *fd = -1;
    return err_set(err, ERR_TIMEOUT, "%s is locked by another fake sbx process", path);
}

void store_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* closing drops the fcntl lock */
}

static char *read_file(const char *path, int *missing)
{
    *missing = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        *missing = errno == ENOENT;
        return NULL;
    }
    size_t cap = 8192, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + len, 1, cap - len - 1, fp);
        len += got;
        if (got == 0)
            break;
        if (len + 1 == cap) {
            char *grown = realloc(buf, cap * 2);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
    }
    fclose(fp);
    if (buf)
        buf[len] = '\0';
    return buf;
}

/* Adds a missing top-level member so readers never meet NULL. */
static int ensure(cJSON *root, const char *key, cJSON *(*make)(void))
{
    cJSON *m = cJSON_GetObjectItemCaseSensitive(root, key);
    if (m)
        return 0;
    m = make();
    return m && cJSON_AddItemToObject(root, key, m) ? 0 : -1;
}

static int ensure_shape(cJSON *root)
{
    if (ensure(root, "policy", cJSON_CreateObject) ||
        ensure(root, "sandboxes", cJSON_CreateArray) || ensure(root, "sessions", cJSON_CreateArray) ||
        ensure(root, "hang", cJSON_CreateArray) || ensure(root, "log", cJSON_CreateArray))
        return -1;
    cJSON *policy = cJSON_GetObjectItemCaseSensitive(root, "policy");
    if (!cJSON_GetObjectItemCaseSensitive(policy, "rules") &&
        !cJSON_AddArrayToObject(policy, "rules"))
        return -1;
    return 0;
}

err_code store_open(store *s, const char *dir, char *err)
{
    memset(s, 0, sizeof *s);
    s->lock_fd = -1;
    if (strlen(dir) >= sizeof s->dir)
        return err_set(err, ERR_USAGE, "state folder path too long");
    memcpy(s->dir, dir, strlen(dir) + 1);
    err_code rc = store_lock(s->dir, "lock", &s->lock_fd, err);
    if (rc != ERR_OK)
        return rc;
    char path[4200];
    rc = path_in(s, "state.json", path, sizeof path, err);
    int missing = 0;
    char *text = rc == ERR_OK ? read_file(path, &missing) : NULL;
    if (rc == ERR_OK && !text && !missing)
        rc = err_set(err, ERR_IO, "cannot read %s", path);
    if (rc == ERR_OK) {
        s->root = text ? cJSON_Parse(text) : cJSON_CreateObject();
        if (!cJSON_IsObject(s->root))
            rc = err_set(err, ERR_CORRUPT, "%s is not the fake sbx's state", path);
        else if (ensure_shape(s->root) != 0)
            rc = err_set(err, ERR_NOMEM, "out of memory");
    }
    free(text);
    if (rc != ERR_OK)
        store_close(s);
    return rc;
}

err_code store_save(store *s, char *err)
{
    char path[4200], tmp[4200];
    err_code rc = path_in(s, "state.json", path, sizeof path, err);
    if (rc == ERR_OK)
        rc = path_in(s, "state.json.tmp", tmp, sizeof tmp, err);
    if (rc != ERR_OK)
        return rc;
    char *text = cJSON_Print(s->root);
    if (!text)
        return err_set(err, ERR_NOMEM, "out of memory");
    FILE *fp = fopen(tmp, "wb");
    int bad = !fp || fputs(text, fp) < 0;
    if (fp && fclose(fp) != 0)
        bad = 1;
    free(text);
    if (bad || rename(tmp, path) != 0) {
        unlink(tmp);
        return err_set(err, ERR_IO, "cannot write %s: %s", path, strerror(errno));
    }
    return ERR_OK;
}

void store_close(store *s)
{
    cJSON_Delete(s->root);
    s->root = NULL;
    store_unlock(s->lock_fd);
    s->lock_fd = -1;
}

err_code store_wipe(store *s, char *err)
{
    char path[4200];
    err_code rc = path_in(s, "state.json", path, sizeof path, err);
    if (rc != ERR_OK)
        return rc;
    if (unlink(path) != 0 && errno != ENOENT)
        return err_set(err, ERR_IO, "cannot remove %s: %s", path, strerror(errno));
    cJSON_Delete(s->root);
    s->root = cJSON_CreateObject();
    if (!s->root || ensure_shape(s->root) != 0)
        return err_set(err, ERR_NOMEM, "out of memory");
    return ERR_OK;
}

cJSON *store_get(store *s, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(s->root, key);
}

cJSON *store_sandbox(store *s, const char *name, int with_hidden)
{
    cJSON *sb;
    cJSON_ArrayForEach(sb, store_get(s, "sandboxes")) {
        if (strcmp(store_str(sb, "name"), name) == 0 && (with_hidden || !store_bool(sb, "hidden")))
            return sb;
    }
    return NULL;
}

void store_prune_sessions(store *s)
{
    cJSON *sessions = store_get(s, "sessions");
    cJSON *it = sessions ? sessions->child : NULL;
    while (it) {
        cJSON *next = it->next;
        pid_t pgid = (pid_t)store_num(it, "pgid");
        if (pgid <= 1 || !plat_proc_alive(pgid, (uint64_t)store_num(it, "token")))
            cJSON_Delete(cJSON_DetachItemViaPointer(sessions, it));
        it = next;
    }
}

const char *store_str(const cJSON *obj, const char *key)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(m) && m->valuestring ? m->valuestring : "";
}

double store_num(const cJSON *obj, const char *key)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(m) ? m->valuedouble : 0;
}

int store_bool(const cJSON *obj, const char *key)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, key));
}

static int replace(cJSON *obj, const char *key, cJSON *value)
{
    if (!value)
        return -1;
    int ok = cJSON_GetObjectItemCaseSensitive(obj, key)
                 ? cJSON_ReplaceItemInObjectCaseSensitive(obj, key, value)
                 : cJSON_AddItemToObject(obj, key, value);
    if (!ok)
        cJSON_Delete(value);
    return ok ? 0 : -1;
}

int store_set_str(cJSON *obj, const char *key, const char *value)
{
    return replace(obj, key, cJSON_CreateString(value));
}

int store_set_num(cJSON *obj, const char *key, double value)
{
    return replace(obj, key, cJSON_CreateNumber(value));
}

int store_set_bool(cJSON *obj, const char *key, int value)
{
    return replace(obj, key, cJSON_CreateBool(value));
}
