/*
 * A metadata filter plugin (it needs the pfn only) that excludes every
 * seventh pfn and fails at the 3000th page asked in the context number
 * FAIL_IN_CONTEXT (0: the first pass over the pages, 1: the reader's).
 * The dump tests: failing in the first pass, it is disabled from that pfn
 * on in both passes (the dump is complete, its pages kept); failing only
 * in the second, after answering for the same pages, the dump stops there
 * and is closed as incomplete.
 */
#include <stdio.h>
#include "vmdump_plugin.h"

#ifndef FAIL_IN_CONTEXT
#define FAIL_IN_CONTEXT 0
#endif

static unsigned long asked[64];
static unsigned next_ctx;

static int init(const struct vmdump_params *params, const struct vmdump_host_api *host, void **module,
                struct vmdump_error *err)
{
    (void)params; (void)host; (void)err;
    *module = asked;
    return VMDUMP_OK;
}

static int ctx_init(const void *module, void **ctx, struct vmdump_error *err)
{
    (void)module;
    if (next_ctx >= 64) {
        snprintf(err->message, sizeof err->message, "too many contexts");
        return VMDUMP_ERR_NO_MEMORY;
    }
    *ctx = &asked[next_ctx++];
    return VMDUMP_OK;
}

static int classify(void *ctx, const struct vmdump_page *page, uint32_t *verdict, struct vmdump_error *err)
{
    unsigned long *count = ctx;
    if (count == &asked[FAIL_IN_CONTEXT] && ++*count >= 3000) {
        snprintf(err->message, sizeof err->message, "fickle at pfn 0x%llx", (unsigned long long)page->pfn);
        return VMDUMP_ERR_FAILED;
    }
    *verdict = page->pfn % 7 == 0 ? VMDUMP_EXCLUDE : VMDUMP_KEEP;
    return VMDUMP_OK;
}

static void finalize(void *p) { (void)p; }

static const struct vmdump_filter_v1 table = {
    .magic = VMDUMP_PLUGIN_MAGIC, .abi_major = VMDUMP_ABI_MAJOR, .abi_minor = VMDUMP_ABI_MINOR,
    .struct_size = sizeof table, .name = "fickle", .version = "0.0.1",
    .needs = 0, .module_init = init, .ctx_init = ctx_init,
    .classify = classify, .ctx_finalize = finalize, .module_finalize = finalize,
};

const struct vmdump_filter_v1 *vmdump_filter_entry_v1(uint32_t major, uint32_t minor)
{
    (void)minor;
    return major == VMDUMP_ABI_MAJOR ? &table : NULL;
}
