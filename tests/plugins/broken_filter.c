/*
 * A content filter plugin that excludes pages whose first byte is 0xAB, and
 * fails from the fifth page of a context on (the loader and dump tests: a
 * failing filter is disabled and its pages are kept).
 */
#include <stdio.h>
#include "vmdump_plugin.h"

static unsigned long seen[64];
static unsigned next_ctx;

static int init(const struct vmdump_params *params, const struct vmdump_host_api *host, void **module,
                struct vmdump_error *err)
{
    (void)params; (void)host; (void)err;
    *module = seen;
    return VMDUMP_OK;
}

static int ctx_init(const void *module, void **ctx, struct vmdump_error *err)
{
    (void)module;
    if (next_ctx >= 64) {
        snprintf(err->message, sizeof err->message, "too many contexts");
        return VMDUMP_ERR_NO_MEMORY;
    }
    *ctx = &seen[next_ctx++];
    return VMDUMP_OK;
}

static int classify(void *ctx, const struct vmdump_page *page, uint32_t *verdict, struct vmdump_error *err)
{
    unsigned long *count = ctx;
    if (++*count >= 5) {
        snprintf(err->message, sizeof err->message, "filter hardware gone at pfn 0x%llx",
                 (unsigned long long)page->pfn);
        return VMDUMP_ERR_FAILED;
    }
    *verdict = page->data[0] == 0xAB ? VMDUMP_EXCLUDE : VMDUMP_KEEP;
    return VMDUMP_OK;
}

static void finalize(void *p) { (void)p; }

static const struct vmdump_filter_v1 table = {
    .magic = VMDUMP_PLUGIN_MAGIC, .abi_major = VMDUMP_ABI_MAJOR, .abi_minor = VMDUMP_ABI_MINOR,
    .struct_size = sizeof table, .name = "flaky-filter", .version = "0.0.1",
    .needs = VMDUMP_FILTER_NEEDS_PAGE, .module_init = init, .ctx_init = ctx_init,
    .classify = classify, .ctx_finalize = finalize, .module_finalize = finalize,
};

const struct vmdump_filter_v1 *vmdump_filter_entry_v1(uint32_t major, uint32_t minor)
{
    (void)minor;
    return major == VMDUMP_ABI_MAJOR ? &table : NULL;
}
