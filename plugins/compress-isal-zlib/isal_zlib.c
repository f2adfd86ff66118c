/*
 * isal_zlib.c - a vmdump compressor plugin over ISA-L's igzip, writing zlib.
 *
 * SPDX-License-Identifier: MIT OR Apache-2.0
 *
 * A vendor's accelerated zlib, written against sdk/include/vmdump_plugin.h
 * alone. Build it with
 *
 *     cc -shared -fPIC -I../../sdk/include isal_zlib.c -lisal -o libvmdump_compress_zlib.so
 *
 * Key "zlib": on the plugin search path the file replaces the host's
 * built-in zlib by name. Output format zlib (kdump flag 0x1): every page is
 * one complete RFC 1950 stream (ISA-L's IGZIP_ZLIB wrapper: 2-byte header,
 * deflate blocks, adler32), which zlib's uncompress(), crash, libkdumpfile,
 * drgn and makedumpfile read.
 * Parameter: level = 0..3, ISA-L's levels (default 3: see below).
 *
 * State follows the header's life cycle: the module holds the validated
 * level (read-only after module_init); each context owns one deflate stream
 * with its level buffer and one inflate state, allocated once in ctx_init.
 * Every page is one call of ISA-L's one-shot API, isal_deflate_stateless
 * (isal_inflate_stateless to read), on a stream set up again for the page
 * (a few stores). That call falls back to stored blocks when a page does not
 * shrink, which isal_deflate does not do at level 0 (a random page grew to
 * 5,551 bytes there), and it is as fast at every level (README.md).
 *
 * Levels 1 and 2 of ISA-L 2.30 are not reproducible, with this API or with
 * isal_deflate: on a few pages in ten thousand they write other bytes (a
 * valid stream of the same page) depending on where in memory the context
 * sits (two contexts fed the same pages differ; with ASLR off a run repeats
 * itself; intel/isa-l#140 asks for deterministic output). Levels 0 and 3
 * gave the same bytes from every context in every trial, so that a dump with
 * them is byte-identical for any number of workers, like one with vmdump's
 * own codecs. Hence the default, level 3 (README.md has the figures).
 */
#include <errno.h>
#include <isa-l/igzip_lib.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmdump_plugin.h"

#define DEFAULT_LEVEL 3
#define ZLIB_WRAPPER_BYTES 6 /* 2-byte header + adler32 */
#define STORED_BLOCK_MAX 65535
#define STORED_BLOCK_HEADER 5

struct module {
    int level;
};

struct context {
    struct isal_zstream deflate;
    struct inflate_state inflate;
    uint8_t *level_buf; /* NULL at level 0, which needs none */
    uint32_t level_buf_size;
    int level;
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
    int level = DEFAULT_LEVEL;
    (void)host; /* this plugin neither logs nor reads VMCOREINFO */

    for (size_t i = 0; params && i < params->count; i++) {
        const struct vmdump_param *p = &params->items[i];
        if (strcmp(p->key, "level") != 0)
            return fail(err, VMDUMP_ERR_INVALID_PARAM, "unknown key `%s` (accepted: level)", p->key);
        char *end;
        errno = 0;
        long value = strtol(p->value, &end, 10);
        if (errno || end == p->value || *end != '\0' || value < ISAL_DEF_MIN_LEVEL
            || value > ISAL_DEF_MAX_LEVEL)
            return fail(err, VMDUMP_ERR_INVALID_PARAM,
                        "`level` = `%s` is not an integer in %d..=%d (ISA-L's levels)", p->value,
                        ISAL_DEF_MIN_LEVEL, ISAL_DEF_MAX_LEVEL);
        level = (int)value;
    }
    struct module *m = malloc(sizeof *m);
    if (!m)
        return fail(err, VMDUMP_ERR_NO_MEMORY, "out of memory");
    m->level = level;
    *module = m;
    return VMDUMP_OK;
}

/*
 * isal_deflate_stateless, given room for it, writes no more than stored
 * blocks take: the input, 5 bytes per block of up to 65535 bytes and the
 * zlib wrapper (igzip_lib.h: "Max expansion is limited to the input size
 * plus the header size of a stored/raw block"). 4107 bytes for a 4 KiB page.
 */
static size_t bound(const void *module, size_t src_len)
{
    (void)module;
    size_t blocks = src_len == 0 ? 1 : (src_len + STORED_BLOCK_MAX - 1) / STORED_BLOCK_MAX;
    return src_len + blocks * STORED_BLOCK_HEADER + ZLIB_WRAPPER_BYTES;
}

/* The level buffer ISA-L suggests for `level` (ISAL_DEF_LVLx_DEFAULT). */
static uint32_t level_buf_size(int level)
{
    switch (level) {
    case 1:
        return ISAL_DEF_LVL1_DEFAULT;
    case 2:
        return ISAL_DEF_LVL2_DEFAULT;
    case 3:
        return ISAL_DEF_LVL3_DEFAULT;
    default:
        return 0;
    }
}

/* Frees whatever ctx_init set up: also the cleanup path of a failed ctx_init. */
static void ctx_finalize(void *ctx)
{
    struct context *c = ctx;
    if (!c)
        return;
    free(c->level_buf);
    free(c);
}

static int ctx_init(const void *module, void **ctx, struct vmdump_error *err)
{
    const struct module *m = module;
    struct context *c = calloc(1, sizeof *c);
    if (!c)
        return fail(err, VMDUMP_ERR_NO_MEMORY, "out of memory");
    uint32_t size = level_buf_size(m->level);
    if (size) {
        /* Zeroed once, so that no byte ISA-L may read starts undefined. */
        c->level_buf = calloc(1, size);
        if (!c->level_buf) {
            ctx_finalize(c);
            return fail(err, VMDUMP_ERR_NO_MEMORY, "out of memory for the level %d buffer (%u bytes)",
                        m->level, size);
        }
    }
    c->level = m->level;
    c->level_buf_size = size;
    *ctx = c;
    return VMDUMP_OK;
}

static int page_compress(void *ctx, const uint8_t *src, size_t src_len, uint8_t *dst,
                         size_t *dst_len, struct vmdump_error *err)
{
    struct context *c = ctx;
    struct isal_zstream *s = &c->deflate;
    if (src_len > UINT32_MAX)
        return fail(err, VMDUMP_ERR_FAILED, "input of %zu bytes is too large for ISA-L", src_len);
    /* The stream of a fresh page: the init clears the level and the wrapper
     * too (after a header ISA-L turns IGZIP_ZLIB into IGZIP_ZLIB_NO_HDR). */
    isal_deflate_stateless_init(s);
    s->level = (uint32_t)c->level;
    s->level_buf = c->level_buf;
    s->level_buf_size = c->level_buf_size;
    s->gzip_flag = IGZIP_ZLIB;
    s->next_in = (uint8_t *)src; /* ISA-L's API is not const-correct; it only reads */
    s->avail_in = (uint32_t)src_len;
    s->next_out = dst;
    s->avail_out = *dst_len > UINT32_MAX ? UINT32_MAX : (uint32_t)*dst_len;
    int rc = isal_deflate_stateless(s);
    if (rc == COMP_OK) {
        *dst_len = s->total_out;
        return VMDUMP_OK;
    }
    if (rc == STATELESS_OVERFLOW)
        return fail(err, VMDUMP_ERR_DST_TOO_SMALL, "%zu output bytes are not enough (bound %zu)",
                    *dst_len, bound(NULL, src_len));
    return fail(err, VMDUMP_ERR_FAILED, "isal_deflate_stateless at level %d failed: %d", c->level, rc);
}

static int page_decompress(void *ctx, const uint8_t *src, size_t src_len, uint8_t *dst,
                           size_t *dst_len, struct vmdump_error *err)
{
    struct inflate_state *s = &((struct context *)ctx)->inflate;
    if (src_len > UINT32_MAX)
        return fail(err, VMDUMP_ERR_CORRUPT, "input of %zu bytes is larger than any page", src_len);
    /* isal_inflate_stateless resets only part of the state (wrapper_flag
     * and the overflow counters outlive a call): start every page from
     * isal_inflate_init, a few stores. ISAL_ZLIB parses the header and
     * checks the adler32. */
    isal_inflate_init(s);
    s->next_in = (uint8_t *)src;
    s->avail_in = (uint32_t)src_len;
    s->next_out = dst;
    s->avail_out = *dst_len > UINT32_MAX ? UINT32_MAX : (uint32_t)*dst_len;
    s->crc_flag = ISAL_ZLIB;
    int rc = isal_inflate_stateless(s);
    switch (rc) {
    case ISAL_DECOMP_OK:
        *dst_len = s->total_out;
        return VMDUMP_OK;
    case ISAL_OUT_OVERFLOW:
        return fail(err, VMDUMP_ERR_DST_TOO_SMALL, "page does not fit in %zu bytes", *dst_len);
    case ISAL_END_INPUT:
        return fail(err, VMDUMP_ERR_CORRUPT, "zlib stream is truncated");
    case ISAL_NEED_DICT:
        return fail(err, VMDUMP_ERR_CORRUPT, "zlib stream needs a preset dictionary");
    case ISAL_INCORRECT_CHECKSUM:
        return fail(err, VMDUMP_ERR_CORRUPT, "zlib stream has a wrong header check or adler32");
    case ISAL_INVALID_WRAPPER:
    case ISAL_UNSUPPORTED_METHOD:
        return fail(err, VMDUMP_ERR_CORRUPT, "not a zlib stream (header)");
    default: /* ISAL_INVALID_BLOCK, _SYMBOL, _LOOKBACK */
        return fail(err, VMDUMP_ERR_CORRUPT, "invalid deflate data (isal_inflate: %d)", rc);
    }
}

static void module_finalize(void *module)
{
    free(module);
}

/* Built under another name to sit beside the built-in zlib:
 * cc -DPLUGIN_NAME='"isal-zlib"' ... -o libvmdump_isal_zlib.so */
#ifndef PLUGIN_NAME
#define PLUGIN_NAME "zlib"
#endif

static const struct vmdump_compressor_v1 table = {
    .magic = VMDUMP_PLUGIN_MAGIC,
    .abi_major = VMDUMP_ABI_MAJOR,
    .abi_minor = VMDUMP_ABI_MINOR,
    .struct_size = sizeof(struct vmdump_compressor_v1),
    .flags = 0,
    .name = PLUGIN_NAME,
    .version = "0.1.0",
    .description = "zlib stream per page (ISA-L igzip), param level 0-3",
    .kdump_format = VMDUMP_FORMAT_ZLIB,
    .module_init = module_init,
    .bound = bound,
    .ctx_init = ctx_init,
    .compress = page_compress,
    .reset = NULL, /* compress sets the stream up afresh for every page */
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
