/*
 * fault_plugins.c - a compressor ("fault-zlib", real zlib) and a filter
 * ("fault-filter", keeps every page) that go wrong on request, for
 * scripts/faults.sh. Built once as two shared objects (-DFAULT_COMPRESSOR,
 * -DFAULT_FILTER). Environment:
 *   FAULT_PLUGIN_MODE  ok | fail (return VMDUMP_ERR_FAILED) | panicked
 *                      (VMDUMP_ERR_PANICKED, what the SDK returns for a
 *                      caught Rust panic) | crash (abort(): the process dies)
 *   FAULT_PLUGIN_AT    compressor: the N-th page compressed in the run
 *                      (over all contexts); filter: the first pfn >= N
 *                      (a filter answers the same for a pfn in every pass)
 *   FAULT_FILTER_NEEDS page: a content filter (on the workers);
 *                      else a metadata filter that needs the pfn only
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "vmdump_plugin.h"

static int mode_status(void)
{
    const char *m = getenv("FAULT_PLUGIN_MODE");
    if (!m || strcmp(m, "ok") == 0)
        return VMDUMP_OK;
    if (strcmp(m, "crash") == 0)
        abort();
    return strcmp(m, "panicked") == 0 ? VMDUMP_ERR_PANICKED : VMDUMP_ERR_FAILED;
}

static unsigned long long fault_at(void)
{
    const char *v = getenv("FAULT_PLUGIN_AT");
    return v ? strtoull(v, NULL, 0) : ~0ULL;
}

static int module_init(const struct vmdump_params *params, const struct vmdump_host_api *host,
                       void **module, struct vmdump_error *err)
{
    (void)host;
    if (params->count > 0) {
        snprintf(err->message, sizeof err->message, "unknown key `%s`", params->items[0].key);
        return VMDUMP_ERR_INVALID_PARAM;
    }
    static int token;
    *module = &token;
    return VMDUMP_OK;
}

static int ctx_init(const void *module, void **ctx, struct vmdump_error *err)
{
    (void)err;
    *ctx = (void *)module;
    return VMDUMP_OK;
}

static void finalize(void *p) { (void)p; }

#ifdef FAULT_COMPRESSOR
static unsigned long long pages;

static size_t bound(const void *module, size_t len) { (void)module; return compressBound(len); }

static int compress_page(void *ctx, const uint8_t *src, size_t len, uint8_t *dst, size_t *dst_len,
                         struct vmdump_error *err)
{
    (void)ctx;
    unsigned long long n = __atomic_add_fetch(&pages, 1, __ATOMIC_RELAXED);
    if (n >= fault_at()) {
        int status = mode_status();
        if (status != VMDUMP_OK) {
            snprintf(err->message, sizeof err->message, "injected fault on page %llu", n);
            return status;
        }
    }
    uLongf out = *dst_len;
    if (compress2(dst, &out, src, len, 1) != Z_OK) {
        snprintf(err->message, sizeof err->message, "compress2 failed");
        return VMDUMP_ERR_FAILED;
    }
    *dst_len = out;
    return VMDUMP_OK;
}

static int decompress_page(void *ctx, const uint8_t *src, size_t len, uint8_t *dst, size_t *dst_len,
                           struct vmdump_error *err)
{
    (void)ctx;
    uLongf out = *dst_len;
    if (uncompress(dst, &out, src, len) != Z_OK) {
        snprintf(err->message, sizeof err->message, "not a zlib stream");
        return VMDUMP_ERR_CORRUPT;
    }
    *dst_len = out;
    return VMDUMP_OK;
}

static const struct vmdump_compressor_v1 table = {
    .magic = VMDUMP_PLUGIN_MAGIC, .abi_major = VMDUMP_ABI_MAJOR, .abi_minor = VMDUMP_ABI_MINOR,
    .struct_size = sizeof table, .name = "fault-zlib", .version = "0.0.1",
    .description = "zlib that fails on request (scripts/faults.sh)", .kdump_format = VMDUMP_FORMAT_ZLIB,
    .module_init = module_init, .bound = bound, .ctx_init = ctx_init, .compress = compress_page,
    .decompress = decompress_page, .ctx_finalize = finalize, .module_finalize = finalize,
};

const struct vmdump_compressor_v1 *vmdump_compressor_entry_v1(uint32_t major, uint32_t minor)
{
    (void)minor;
    return major == VMDUMP_ABI_MAJOR ? &table : NULL;
}
#endif

#ifdef FAULT_FILTER
static int classify(void *ctx, const struct vmdump_page *page, uint32_t *verdict, struct vmdump_error *err)
{
    (void)ctx;
    if (page->pfn >= fault_at()) {
        int status = mode_status();
        if (status != VMDUMP_OK) {
            snprintf(err->message, sizeof err->message, "injected fault at pfn 0x%llx",
                     (unsigned long long)page->pfn);
            return status;
        }
    }
    *verdict = VMDUMP_KEEP;
    return VMDUMP_OK;
}

static struct vmdump_filter_v1 table = {
    .magic = VMDUMP_PLUGIN_MAGIC, .abi_major = VMDUMP_ABI_MAJOR, .abi_minor = VMDUMP_ABI_MINOR,
    .struct_size = sizeof table, .name = "fault-filter", .version = "0.0.1",
    .description = "keeps every page, fails on request (scripts/faults.sh)",
    .module_init = module_init, .ctx_init = ctx_init, .classify = classify,
    .ctx_finalize = finalize, .module_finalize = finalize,
};

const struct vmdump_filter_v1 *vmdump_filter_entry_v1(uint32_t major, uint32_t minor)
{
    (void)minor;
    const char *needs = getenv("FAULT_FILTER_NEEDS");
    table.needs = needs && strcmp(needs, "page") == 0 ? VMDUMP_FILTER_NEEDS_PAGE : 0;
    return major == VMDUMP_ABI_MAJOR ? &table : NULL;
}
#endif
