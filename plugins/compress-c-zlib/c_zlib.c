/*
 * c_zlib.c - a vmdump compressor plugin written in C over the system zlib.
 *
 * SPDX-License-Identifier: MIT OR Apache-2.0
 *
 * The example to copy when writing a vendor plugin: it needs nothing but
 * sdk/include/vmdump_plugin.h and a C compiler. Build it alone with
 *
 *     cc -shared -fPIC -I../../sdk/include c_zlib.c -lz -o libvmdump_c_zlib.so
 *
 * Key "c-zlib", output format zlib (kdump flag 0x1, one RFC 1950 stream per
 * page, readable by crash, libkdumpfile, drgn and makedumpfile).
 * Parameter: level = 1..9 (default 1, Z_BEST_SPEED, as makedumpfile).
 *
 * State follows the header's life cycle: the module holds the validated
 * level (read-only after module_init, shared by every worker); each context
 * owns one deflate and one inflate stream, allocated once in ctx_init and
 * reset for every page, so nothing is allocated per page.
 */
#define ZLIB_CONST /* const next_in: no cast needed for the host's src */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "vmdump_plugin.h"

struct module {
    int level;
};

struct context {
    z_stream deflate, inflate;
    int deflate_ready, inflate_ready; /* what ctx_init managed to set up */
};

/* Writes a message for the host; err may be NULL. Returns `status`. */
__attribute__((format(printf, 3, 4)))
static int fail(struct vmdump_error *err, int status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return status;
}

static int module_init(const struct vmdump_params *params, const struct vmdump_host_api *host,
                       void **module, struct vmdump_error *err)
{
    int level = 1;
    (void)host; /* this plugin neither logs nor reads VMCOREINFO */

    for (size_t i = 0; params && i < params->count; i++) {
        const struct vmdump_param *p = &params->items[i];
        if (strcmp(p->key, "level") != 0)
            return fail(err, VMDUMP_ERR_INVALID_PARAM, "unknown key `%s` (accepted: level)", p->key);
        char *end;
        errno = 0;
        long value = strtol(p->value, &end, 10);
        if (errno || end == p->value || *end != '\0' || value < 1 || value > 9)
            return fail(err, VMDUMP_ERR_INVALID_PARAM, "`level` = `%s` is not an integer in 1..=9", p->value);
        level = (int)value;
    }
    struct module *m = malloc(sizeof *m);
    if (!m)
        return fail(err, VMDUMP_ERR_NO_MEMORY, "out of memory");
    m->level = level;
    *module = m;
    return VMDUMP_OK;
}

/* zlib's own worst case for deflateInit's default parameters (4110 for 4 KiB). */
static size_t bound(const void *module, size_t src_len)
{
    (void)module;
    return compressBound(src_len);
}

/* Frees whatever ctx_init set up: also the cleanup path of a failed ctx_init. */
static void ctx_finalize(void *ctx)
{
    struct context *c = ctx;
    if (!c)
        return;
    if (c->deflate_ready)
        deflateEnd(&c->deflate);
    if (c->inflate_ready)
        inflateEnd(&c->inflate);
    free(c);
}

static int ctx_init(const void *module, void **ctx, struct vmdump_error *err)
{
    const struct module *m = module;
    struct context *c = calloc(1, sizeof *c); /* zeroed: zalloc/zfree/opaque = Z_NULL */
    if (!c)
        return fail(err, VMDUMP_ERR_NO_MEMORY, "out of memory");
    int rc = deflateInit(&c->deflate, m->level);
    c->deflate_ready = rc == Z_OK;
    if (rc == Z_OK) {
        rc = inflateInit(&c->inflate);
        c->inflate_ready = rc == Z_OK;
    }
    if (rc != Z_OK) {
        ctx_finalize(c);
        return fail(err, rc == Z_MEM_ERROR ? VMDUMP_ERR_NO_MEMORY : VMDUMP_ERR_FAILED,
                    "zlib stream set-up failed: %s", zError(rc));
    }
    *ctx = c;
    return VMDUMP_OK;
}

static int page_compress(void *ctx, const uint8_t *src, size_t src_len, uint8_t *dst,
                         size_t *dst_len, struct vmdump_error *err)
{
    z_stream *s = &((struct context *)ctx)->deflate;
    if (src_len > UINT_MAX)
        return fail(err, VMDUMP_ERR_FAILED, "input of %zu bytes is too large for zlib", src_len);
    /* Every page is a stream of its own: reset here, so no separate reset
     * callback is needed (deflateReset keeps the allocated state). */
    int rc = deflateReset(s);
    if (rc != Z_OK)
        return fail(err, VMDUMP_ERR_FAILED, "deflateReset: %s", zError(rc));
    s->next_in = src;
    s->avail_in = (uInt)src_len;
    s->next_out = dst;
    s->avail_out = *dst_len > UINT_MAX ? UINT_MAX : (uInt)*dst_len;
    rc = deflate(s, Z_FINISH);
    if (rc == Z_STREAM_END) {
        *dst_len = s->total_out;
        return VMDUMP_OK;
    }
    if (rc == Z_OK || rc == Z_BUF_ERROR) /* ran out of output space */
        return fail(err, VMDUMP_ERR_DST_TOO_SMALL, "%zu output bytes are not enough (bound %zu)",
                    *dst_len, bound(NULL, src_len));
    return fail(err, VMDUMP_ERR_FAILED, "deflate: %s", s->msg ? s->msg : zError(rc));
}

static int page_decompress(void *ctx, const uint8_t *src, size_t src_len, uint8_t *dst,
                           size_t *dst_len, struct vmdump_error *err)
{
    z_stream *s = &((struct context *)ctx)->inflate;
    if (src_len > UINT_MAX)
        return fail(err, VMDUMP_ERR_CORRUPT, "input of %zu bytes is larger than any page", src_len);
    int rc = inflateReset(s);
    if (rc != Z_OK)
        return fail(err, VMDUMP_ERR_FAILED, "inflateReset: %s", zError(rc));
    s->next_in = src;
    s->avail_in = (uInt)src_len;
    s->next_out = dst;
    s->avail_out = *dst_len > UINT_MAX ? UINT_MAX : (uInt)*dst_len;
    rc = inflate(s, Z_FINISH);
    switch (rc) {
    case Z_STREAM_END:
        *dst_len = s->total_out;
        return VMDUMP_OK;
    case Z_MEM_ERROR:
        return fail(err, VMDUMP_ERR_NO_MEMORY, "inflate: out of memory");
    case Z_OK:
    case Z_BUF_ERROR: /* no progress possible: output full, or input ended early */
        if (s->avail_out == 0 && s->avail_in > 0)
            return fail(err, VMDUMP_ERR_DST_TOO_SMALL, "page does not fit in %zu bytes", *dst_len);
        return fail(err, VMDUMP_ERR_CORRUPT, "zlib stream is truncated");
    default: /* Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR */
        return fail(err, VMDUMP_ERR_CORRUPT, "inflate: %s", s->msg ? s->msg : zError(rc));
    }
}

static void module_finalize(void *module)
{
    free(module);
}

/* A vendor may ship it under the standard name, to replace the host's
 * built-in zlib: cc -DPLUGIN_NAME='"zlib"' ... */
#ifndef PLUGIN_NAME
#define PLUGIN_NAME "c-zlib"
#endif

static const struct vmdump_compressor_v1 table = {
    .magic = VMDUMP_PLUGIN_MAGIC,
    .abi_major = VMDUMP_ABI_MAJOR,
    .abi_minor = VMDUMP_ABI_MINOR,
    .struct_size = sizeof(struct vmdump_compressor_v1),
    .flags = 0,
    .name = PLUGIN_NAME,
    .version = "0.1.0",
    .description = "zlib stream per page (C plugin over the system zlib), param level 1-9",
    .kdump_format = VMDUMP_FORMAT_ZLIB,
    .module_init = module_init,
    .bound = bound,
    .ctx_init = ctx_init,
    .compress = page_compress,
    .reset = NULL, /* compress starts every page with deflateReset */
    .decompress = page_decompress,
    .ctx_finalize = ctx_finalize,
    .module_finalize = module_finalize,
};

/* The one exported symbol. */
const struct vmdump_compressor_v1 *vmdump_compressor_entry_v1(uint32_t host_abi_major,
                                                              uint32_t host_abi_minor)
{
    (void)host_abi_minor; /* any 1.x host can use a 1.0 table */
    return host_abi_major == VMDUMP_ABI_MAJOR ? &table : NULL;
}
