/*
 * A metadata filter plugin that reads struct pages: it excludes pages whose
 * struct page has the PG_lru flag, taking the flag's bit number and the
 * flags' offset from VMCOREINFO through the host API.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vmdump_plugin.h"

struct module { long lru_bit; long flags_offset; };

static long key(const struct vmdump_host_api *host, const char *name, int base)
{
    char buf[64];
    if (host->vmcoreinfo(host->host, name, buf, sizeof buf) < 0)
        return -1;
    return strtol(buf, NULL, base);
}

static int init(const struct vmdump_params *params, const struct vmdump_host_api *host, void **module,
                struct vmdump_error *err)
{
    (void)params;
    static struct module m;
    m.lru_bit = key(host, "NUMBER(PG_lru)", 10);
    m.flags_offset = key(host, "OFFSET(page.flags)", 10);
    if (m.lru_bit < 0 || m.flags_offset < 0) {
        snprintf(err->message, sizeof err->message, "VMCOREINFO lacks NUMBER(PG_lru) or OFFSET(page.flags)");
        return VMDUMP_ERR_FAILED;
    }
    *module = &m;
    return VMDUMP_OK;
}

static int ctx_init(const void *module, void **ctx, struct vmdump_error *err)
{
    (void)err;
    *ctx = (void *)module;
    return VMDUMP_OK;
}

static int classify(void *ctx, const struct vmdump_page *page, uint32_t *verdict, struct vmdump_error *err)
{
    const struct module *m = ctx;
    uint64_t flags;
    if (page->struct_page_len < (size_t)m->flags_offset + 8) {
        snprintf(err->message, sizeof err->message, "struct page too short");
        return VMDUMP_ERR_FAILED;
    }
    memcpy(&flags, page->struct_page + m->flags_offset, 8);
    *verdict = (flags >> m->lru_bit) & 1 ? VMDUMP_EXCLUDE : VMDUMP_KEEP;
    return VMDUMP_OK;
}

static void finalize(void *p) { (void)p; }

static const struct vmdump_filter_v1 table = {
    .magic = VMDUMP_PLUGIN_MAGIC, .abi_major = VMDUMP_ABI_MAJOR, .abi_minor = VMDUMP_ABI_MINOR,
    .struct_size = sizeof table, .name = "lru", .version = "0.0.1",
    .needs = VMDUMP_FILTER_NEEDS_STRUCT_PAGE, .module_init = init, .ctx_init = ctx_init,
    .classify = classify, .ctx_finalize = finalize, .module_finalize = finalize,
};

const struct vmdump_filter_v1 *vmdump_filter_entry_v1(uint32_t major, uint32_t minor)
{
    (void)minor;
    return major == VMDUMP_ABI_MAJOR ? &table : NULL;
}
