#include "tk_tls.h"

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define VALID_SECS (24L * 3600L)

static EVP_PKEY *new_key(void)
{
    return EVP_EC_gen("P-256");
}

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!ext)
        return -1;
    int ok = X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
    return ok ? 0 : -1;
}

static int random_serial(X509 *cert)
{
    BIGNUM *bn = BN_new();
    int ok = bn && BN_rand(bn, 120, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) &&
             BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) != NULL;
    BN_free(bn);
    return ok ? 0 : -1;
}

/* A certificate for `key` named `cn`, signed by issuer/issuer_key (itself
 * when issuer is NULL). */
static X509 *new_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *issuer_key)
{
    X509 *cert = X509_new();
    if (!cert || !X509_set_version(cert, 2) || random_serial(cert) != 0 ||
        !X509_gmtime_adj(X509_getm_notBefore(cert), -3600) ||
        !X509_gmtime_adj(X509_getm_notAfter(cert), VALID_SECS) || !X509_set_pubkey(cert, key))
        goto fail;
    X509_NAME *name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"band-smoke tests",
                               -1, -1, 0);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    if (!X509_set_issuer_name(cert, issuer ? X509_get_subject_name(issuer) : name))
        goto fail;
    X509 *signer = issuer ? issuer : cert;
    if (add_ext(cert, signer, NID_subject_key_identifier, "hash") != 0 ||
        add_ext(cert, signer, NID_authority_key_identifier, "keyid:always") != 0)
        goto fail;
    if (!issuer) {
        if (add_ext(cert, cert, NID_basic_constraints, "critical,CA:TRUE") != 0 ||
            add_ext(cert, cert, NID_key_usage, "critical,keyCertSign,cRLSign") != 0)
            goto fail;
    } else if (add_ext(cert, issuer, NID_basic_constraints, "critical,CA:FALSE") != 0 ||
               add_ext(cert, issuer, NID_key_usage, "critical,digitalSignature") != 0 ||
               add_ext(cert, issuer, NID_ext_key_usage, "serverAuth") != 0 ||
               add_ext(cert, issuer, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1") != 0) {
        goto fail;
    }
    if (!X509_sign(cert, issuer_key ? issuer_key : key, EVP_sha256()))
        goto fail;
    return cert;
fail:
    X509_free(cert);
    return NULL;
}

static int write_pem(const char *path, X509 *cert, EVP_PKEY *key)
{
    mode_t old = umask(077);
    FILE *fp = fopen(path, "w");
    umask(old);
    if (!fp)
        return -1;
    int ok = cert ? PEM_write_X509(fp, cert)
                  : PEM_write_PrivateKey(fp, key, NULL, NULL, 0, NULL, NULL);
    return fclose(fp) == 0 && ok ? 0 : -1;
}

static int generate(const tk_tls *t)
{
    EVP_PKEY *ca_key = new_key(), *key = new_key();
    X509 *ca = ca_key ? new_cert(ca_key, "band-smoke throwaway test CA", NULL, NULL) : NULL;
    X509 *cert = ca && key ? new_cert(key, "localhost", ca, ca_key) : NULL;
    int rc = cert && write_pem(t->ca, ca, NULL) == 0 && write_pem(t->key, NULL, key) == 0 &&
                     write_pem(t->cert, cert, NULL) == 0
                 ? 0
                 : -1;
    if (rc != 0) {
        fprintf(stderr, "tk_tls: cannot make the test certificates: %s\n",
                ERR_error_string(ERR_get_error(), NULL));
        unlink(t->ca);
    }
    X509_free(cert);
    X509_free(ca);
    EVP_PKEY_free(key);
    EVP_PKEY_free(ca_key);
    return rc;
}

int tk_tls_make(const char *dir, tk_tls *out)
{
    if (strlen(dir) + sizeof "/server.pem" > sizeof out->ca) {
        fprintf(stderr, "tk_tls: folder path too long: %s\n", dir);
        return -1;
    }
    snprintf(out->ca, sizeof out->ca, "%s/ca.pem", dir);
    snprintf(out->cert, sizeof out->cert, "%s/server.pem", dir);
    snprintf(out->key, sizeof out->key, "%s/server.key", dir);
    if (access(out->ca, R_OK) == 0 && access(out->cert, R_OK) == 0 &&
        access(out->key, R_OK) == 0)
        return 0;
    return generate(out);
}
