/*
 * Deliberately broken compressor plugins for the loader and policy tests.
 * One source, one variant per -D flag (see tests/loader.rs). With no flag it
 * is a correct "store" plugin (custom format: pages copied as they are).
 *
 *   BROKEN_NO_ENTRY      no vmdump_compressor_entry_v1 symbol
 *   BROKEN_WRONG_MAGIC   magic is not VMDUMP_PLUGIN_MAGIC
 *   BROKEN_OTHER_MAJOR   abi_major = 2
 *   BROKEN_SHORT_TABLE   struct_size shorter than the 1.0 table
 *   BROKEN_REFUSES_HOST  the entry returns NULL
 *   BROKEN_NO_DECOMPRESS a required callback is NULL
 *   BROKEN_INIT_FAILS    module_init fails with a message
 *   BROKEN_OVERSIZE      compress reports more bytes than the buffer holds
 *   BROKEN_FAILS_MIDRUN  compress fails from the third page of a context on
 *   BROKEN_CLAIMS_ZLIB   says its output is zlib but stores raw bytes
 *   REAL_ZLIB            (combinable) writes real zlib streams with the
 *                        system zlib, so dumps made with it are readable
 */
#include <string.h>
#include <stdio.h>
#include "vmdump_plugin.h"
#ifdef REAL_ZLIB
#include <zlib.h>
#endif

struct store_ctx { unsigned long pages; };
static struct store_ctx contexts[64];
static unsigned next_ctx;

static int store_init(const struct vmdump_params *params, const struct vmdump_host_api *host,
                      void **module, struct vmdump_error *err)
{
    (void)host;
#ifdef BROKEN_INIT_FAILS
    (void)params; (void)module;
    snprintf(err->message, sizeof err->message, "hardware accelerator not present");
    return VMDUMP_ERR_FAILED;
#else
    if (params->count > 0) {
        snprintf(err->message, sizeof err->message, "unknown key `%s`", params->items[0].key);
        return VMDUMP_ERR_INVALID_PARAM;
    }
    *module = contexts;
    return VMDUMP_OK;
#endif
}

#ifdef REAL_ZLIB
static size_t store_bound(const void *module, size_t len) { (void)module; return compressBound(len); }
#else
static size_t store_bound(const void *module, size_t len) { (void)module; return len; }
#endif

static int store_ctx_init(const void *module, void **ctx, struct vmdump_error *err)
{
    (void)module;
    if (next_ctx >= 64) {
        snprintf(err->message, sizeof err->message, "too many contexts");
        return VMDUMP_ERR_NO_MEMORY;
    }
    contexts[next_ctx].pages = 0;
    *ctx = &contexts[next_ctx++];
    return VMDUMP_OK;
}

static int store_compress(void *ctx, const uint8_t *src, size_t len, uint8_t *dst, size_t *dst_len,
                          struct vmdump_error *err)
{
    struct store_ctx *c = ctx;
    c->pages++;
#ifdef BROKEN_FAILS_MIDRUN
    if (c->pages >= 3) {
        snprintf(err->message, sizeof err->message, "device timeout on page %lu", c->pages);
        return VMDUMP_ERR_FAILED;
    }
#endif
#ifdef REAL_ZLIB
    uLongf out = *dst_len;
    if (compress2(dst, &out, src, len, 1) != Z_OK) {
        snprintf(err->message, sizeof err->message, "compress2 failed");
        return VMDUMP_ERR_FAILED;
    }
    *dst_len = out;
    return VMDUMP_OK;
#endif
    if (*dst_len < len) {
        snprintf(err->message, sizeof err->message, "buffer too small");
        return VMDUMP_ERR_DST_TOO_SMALL;
    }
    memcpy(dst, src, len);
#ifdef BROKEN_OVERSIZE
    *dst_len = *dst_len + 100;
#else
    *dst_len = len;
#endif
    return VMDUMP_OK;
}

__attribute__((unused)) static int store_decompress(void *ctx, const uint8_t *src, size_t len, uint8_t *dst, size_t *dst_len,
                            struct vmdump_error *err)
{
    (void)ctx;
#ifdef REAL_ZLIB
    uLongf out = *dst_len;
    if (uncompress(dst, &out, src, len) != Z_OK) {
        snprintf(err->message, sizeof err->message, "not a zlib stream");
        return VMDUMP_ERR_CORRUPT;
    }
    *dst_len = out;
    return VMDUMP_OK;
#endif
    if (*dst_len < len) {
        snprintf(err->message, sizeof err->message, "buffer too small");
        return VMDUMP_ERR_DST_TOO_SMALL;
    }
    memcpy(dst, src, len);
    *dst_len = len;
    return VMDUMP_OK;
}

static void store_ctx_finalize(void *ctx) { (void)ctx; }
static void store_module_finalize(void *module) { (void)module; }

__attribute__((unused)) static const struct vmdump_compressor_v1 table = {
#ifdef BROKEN_WRONG_MAGIC
    .magic = 0x1234,
#else
    .magic = VMDUMP_PLUGIN_MAGIC,
#endif
#ifdef BROKEN_OTHER_MAJOR
    .abi_major = 2,
#else
    .abi_major = VMDUMP_ABI_MAJOR,
#endif
    .abi_minor = VMDUMP_ABI_MINOR,
#ifdef BROKEN_SHORT_TABLE
    .struct_size = 40,
#else
    .struct_size = sizeof(struct vmdump_compressor_v1),
#endif
    .name = PLUGIN_NAME,
    .version = "0.0.1",
    .description = "test plugin",
#if defined(BROKEN_CLAIMS_ZLIB) || defined(REAL_ZLIB)
    .kdump_format = VMDUMP_FORMAT_ZLIB,
#else
    .kdump_format = VMDUMP_FORMAT_CUSTOM,
#endif
    .module_init = store_init,
    .bound = store_bound,
    .ctx_init = store_ctx_init,
    .compress = store_compress,
    .reset = NULL,
#ifdef BROKEN_NO_DECOMPRESS
    .decompress = NULL,
#else
    .decompress = store_decompress,
#endif
    .ctx_finalize = store_ctx_finalize,
    .module_finalize = store_module_finalize,
};

#ifdef BROKEN_NO_ENTRY
int not_a_vmdump_plugin(void) { return 42; }
#else
const struct vmdump_compressor_v1 *vmdump_compressor_entry_v1(uint32_t major, uint32_t minor)
{
    (void)major; (void)minor;
#ifdef BROKEN_REFUSES_HOST
    return NULL;
#else
    return &table;
#endif
}
#endif
