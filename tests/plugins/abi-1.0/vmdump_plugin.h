/*
 * vmdump_plugin.h - the vmdump plugin contract, ABI major version 1.
 *
 * SPDX-License-Identifier: MIT OR Apache-2.0
 *
 * This header is the whole contract between the vmdump host and a plugin.
 * A vendor needs nothing else to ship a compressor as a shared object.
 *
 * How a plugin is found and loaded
 * --------------------------------
 * The host opens every `*.so` file on its plugin search path with dlopen()
 * and looks up the versioned entry symbol:
 *
 *     const struct vmdump_compressor_v1 *
 *     vmdump_compressor_entry_v1(uint32_t host_abi_major, uint32_t host_abi_minor);
 *
 * The entry returns a pointer to a table that lives as long as the library
 * (a `static const` object), or NULL when the plugin refuses this host.
 * The host then checks, in this order, and refuses the plugin with an error
 * naming the file and both versions when a check fails:
 *   1. magic == VMDUMP_PLUGIN_MAGIC
 *   2. abi_major == VMDUMP_ABI_MAJOR (the symbol name carries it too)
 *   3. struct_size >= the size of the version-1.0 table
 *   4. name is a non-empty lowercase string, every required callback is set.
 * Libraries are never unloaded (no dlclose): nothing a plugin returned can
 * outlive its code.
 *
 * Versioning rules
 * ----------------
 * - A new major version gets a new entry symbol (`..._entry_v2`) and may
 *   change anything.
 * - A minor version only APPENDS fields at the end of a table. The host reads
 *   a field only when `struct_size` shows the plugin's table contains it, and
 *   a plugin reads a host field only when the host table's `struct_size` does.
 *
 * Life cycle (shared state versus per-thread state, as in Linux zram)
 * -------------------------------------------------------------------
 *   module_init      once per run: validate the parameters, build the shared,
 *                    IMMUTABLE module state. Refuse unknown keys.
 *   ctx_init         once per worker thread: per-thread scratch state
 *                    (codec stream, work memory). Never shared.
 *   compress/reset   once per page, on the thread that owns the context.
 *   decompress       reading dumps back; also per context.
 *   ctx_finalize     once per context, at the end of the worker.
 *   module_finalize  once, after every context is finalized.
 *
 * Thread safety the host guarantees:
 * - `bound` and `ctx_init` may be called from several threads at once with
 *   the same module pointer: the module state must be read-only after init.
 * - A context is used by one thread at a time (it may move between threads
 *   between calls, never during one).
 *
 * Buffers: the host owns every buffer. It sizes `dst` for compress from
 * `bound(module, src_len)` and stores a page raw when the compressed result
 * is not smaller than the page. A plugin never allocates per page if it can
 * avoid it: allocate in ctx_init, reuse in compress.
 *
 * Errors: every callback that can fail returns a `vmdump_status`. On failure
 * it may write a NUL-terminated message into `err->message` (truncate to fit).
 * A compress failure never loses a page: the host stores that page raw,
 * disables the plugin for the rest of the run and reports it.
 */
#ifndef VMDUMP_PLUGIN_H
#define VMDUMP_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** "VMDUMPPL" read as a little-endian 64-bit integer. First field of every table. */
#define VMDUMP_PLUGIN_MAGIC 0x4C50504D55444D56ULL

/** ABI version this header describes. */
#define VMDUMP_ABI_MAJOR 1
#define VMDUMP_ABI_MINOR 0

/** Name of the compressor entry symbol for ABI major 1. */
#define VMDUMP_COMPRESSOR_ENTRY_V1 "vmdump_compressor_entry_v1"

/** Longest message a plugin can return in `struct vmdump_error`, NUL included. */
#define VMDUMP_ERROR_MESSAGE_LEN 256

/** Return codes of every fallible callback. */
enum vmdump_status {
    VMDUMP_OK = 0,
    /** Generic failure; details in `err->message`. */
    VMDUMP_ERR_FAILED = 1,
    /** A parameter is unknown, malformed or out of range (module_init only). */
    VMDUMP_ERR_INVALID_PARAM = 2,
    /** `*dst_len` (the capacity on input) is too small for the result. */
    VMDUMP_ERR_DST_TOO_SMALL = 3,
    /** decompress: the input is not a valid stream of this format. */
    VMDUMP_ERR_CORRUPT = 4,
    /** A Rust plugin panicked; the SDK caught it at the boundary. */
    VMDUMP_ERR_PANICKED = 5,
    /** Out of memory. */
    VMDUMP_ERR_NO_MEMORY = 6
};

/**
 * Page compression formats of the kdump-compressed file format (the
 * `DUMP_DH_COMPRESSED_*` bits). A plugin declares which one its output is, so
 * that crash, libkdumpfile, drgn and makedumpfile can read the dump. Never
 * invent bits: a non-standard codec uses VMDUMP_FORMAT_CUSTOM and then needs
 * the same plugin to read the dump back.
 */
enum vmdump_kdump_format {
    VMDUMP_FORMAT_ZLIB = 0x01,   /* RFC 1950 zlib stream, one per page */
    VMDUMP_FORMAT_LZO = 0x02,    /* raw LZO1X block, no header */
    VMDUMP_FORMAT_SNAPPY = 0x04, /* raw Snappy block (not the framing format) */
    VMDUMP_FORMAT_ZSTD = 0x20,   /* one zstd frame with the content size */
    VMDUMP_FORMAT_CUSTOM = 0     /* not readable without this plugin */
};

/** Message levels for `vmdump_host_api.log`. */
enum vmdump_log_level {
    VMDUMP_LOG_ERROR = 1,
    VMDUMP_LOG_WARN = 2,
    VMDUMP_LOG_INFO = 3,
    VMDUMP_LOG_DEBUG = 4
};

/** Error detail a callback may fill in on failure. Zeroed by the host before each call. */
struct vmdump_error {
    char message[VMDUMP_ERROR_MESSAGE_LEN];
};

/** One plugin parameter from the TOML profile or the command line, as text. */
struct vmdump_param {
    const char *key;   /* NUL-terminated, never NULL */
    const char *value; /* NUL-terminated, never NULL */
};

/** The parameter list given to module_init; valid only during that call. */
struct vmdump_params {
    const struct vmdump_param *items;
    size_t count;
};

/**
 * Services the host offers a plugin. Valid from module_init until
 * module_finalize returns; callable from any thread.
 */
struct vmdump_host_api {
    uint32_t struct_size; /* sizeof(struct vmdump_host_api) of the host */
    uint32_t abi_minor;   /* the host's VMDUMP_ABI_MINOR */
    void *host;           /* opaque, passed back to every call below */
    /** Log one line (no newline needed) through the host's messages. */
    void (*log)(void *host, enum vmdump_log_level level, const char *message);
    /**
     * Look up a VMCOREINFO key of the dump being written, e.g.
     * "SYMBOL(mem_section)" or "OFFSET(page.flags)". On success copies the
     * value and a NUL into `buf` and returns its length without the NUL.
     * Returns -1 when the key is absent (or no dump is open), and the needed
     * length when `buf_len` is too small (then nothing useful is in buf).
     */
    int64_t (*vmcoreinfo)(void *host, const char *key, char *buf, size_t buf_len);
};

/**
 * A compressor plugin, ABI 1.0. Returned by vmdump_compressor_entry_v1.
 * Append-only: minor versions add fields after `module_finalize`.
 */
struct vmdump_compressor_v1 {
    uint64_t magic;        /* VMDUMP_PLUGIN_MAGIC */
    uint32_t abi_major;    /* VMDUMP_ABI_MAJOR the plugin was built with */
    uint32_t abi_minor;    /* VMDUMP_ABI_MINOR the plugin was built with */
    uint32_t struct_size;  /* sizeof(struct vmdump_compressor_v1) of the plugin */
    uint32_t flags;        /* no flags are defined in 1.0: write 0 */
    const char *name;      /* short unique key used in profiles: "zlib", "vendor-zlib" */
    const char *version;   /* the plugin's own version, free text */
    const char *description; /* one line for `vmdump plugins`; may be NULL */
    uint32_t kdump_format; /* enum vmdump_kdump_format of the output */
    uint32_t reserved;     /* 0 */

    /**
     * Validate `params` and build the shared module state into `*module`.
     * Unknown keys must be refused with VMDUMP_ERR_INVALID_PARAM and a message
     * naming the key. `host` stays valid until module_finalize. Required.
     */
    int (*module_init)(const struct vmdump_params *params, const struct vmdump_host_api *host,
                       void **module, struct vmdump_error *err);

    /** Largest output compress can write for `src_len` input bytes. Required. */
    size_t (*bound)(const void *module, size_t src_len);

    /** Create one per-thread context into `*ctx`. Required. */
    int (*ctx_init)(const void *module, void **ctx, struct vmdump_error *err);

    /**
     * Compress `src_len` bytes (one page) into `dst`. `*dst_len` holds the
     * capacity on input (at least bound(src_len)) and the bytes written on
     * success. The output must be one self-contained stream of
     * `kdump_format` that decompresses to exactly `src_len` bytes. Required.
     */
    int (*compress)(void *ctx, const uint8_t *src, size_t src_len, uint8_t *dst, size_t *dst_len,
                    struct vmdump_error *err);

    /**
     * Make the context behave exactly as if new (same output bytes as a fresh
     * context). Called after every compress and after a failed call. Optional
     * (NULL: the codec keeps no state between pages).
     */
    int (*reset)(void *ctx, struct vmdump_error *err);

    /**
     * Decompress one page written by compress. `*dst_len` holds the capacity
     * on input and the bytes written on success. Required: vmdump reads back
     * every dump it writes.
     */
    int (*decompress)(void *ctx, const uint8_t *src, size_t src_len, uint8_t *dst,
                      size_t *dst_len, struct vmdump_error *err);

    /** Free a context. Called exactly once per successful ctx_init. Required. */
    void (*ctx_finalize)(void *ctx);

    /** Free the module state, after all its contexts. Required. */
    void (*module_finalize)(void *module);
};

/** The entry point every compressor plugin exports (C linkage, default visibility). */
const struct vmdump_compressor_v1 *vmdump_compressor_entry_v1(uint32_t host_abi_major,
                                                              uint32_t host_abi_minor);

/*
 * Filter plugins
 * --------------
 * A filter decides, page by page, whether a page is left out of the dump.
 * It is found and loaded like a compressor, through its own versioned entry
 * symbol:
 *
 *     const struct vmdump_filter_v1 *
 *     vmdump_filter_entry_v1(uint32_t host_abi_major, uint32_t host_abi_minor);
 *
 * The table starts with the same fields as the compressor table and the host
 * checks it in the same order (magic, abi_major, struct_size, name, required
 * callbacks), and also refuses a `needs` with a bit this header does not
 * define. The versioning rules above apply unchanged: minor versions append
 * fields after `module_finalize`, and the host never unloads the library.
 *
 * What a filter sees is what it declares in `needs`, and that also decides
 * where the host runs it:
 *   0                                the pfn and physical address only.
 *   VMDUMP_FILTER_NEEDS_STRUCT_PAGE  a metadata filter: it also gets the
 *                                    page's `struct page` bytes and runs
 *                                    before any page byte is read, so an
 *                                    excluded page is never read at all.
 *   VMDUMP_FILTER_NEEDS_PAGE         a content filter: it also gets the page
 *                                    bytes and runs on the workers, after the
 *                                    zero-page check and before compression
 *                                    (with the struct page bytes too when
 *                                    both bits are set).
 * A pointer the filter did not ask for is NULL; one it asked for is never
 * NULL (the page data is exactly one page long).
 *
 * Life cycle and thread safety are those of compressors: module_init once
 * (validate parameters, refuse unknown keys, build the shared state, which is
 * read-only afterwards), ctx_init once per worker or pass thread (ctx_init may
 * run on several threads at once with the same module), classify once per
 * page on the thread that owns the context, ctx_finalize, module_finalize.
 * A context may be used for pages in any order, and a filter gives the same
 * verdict for the same page whatever the context saw before.
 *
 * A filter can only ever cost pages, never lose the dump: when module_init,
 * ctx_init or classify fails (or a Rust filter panics), or classify writes a
 * verdict other than VMDUMP_KEEP or VMDUMP_EXCLUDE, the host disables the
 * filter for the rest of the run, KEEPS every page it would have judged and
 * reports it.
 *
 * A filter reads the dumped kernel's VMCOREINFO through the host API
 * (`vmdump_host_api.vmcoreinfo`), e.g. "SIZE(page)", "OFFSET(page.flags)" or
 * "NUMBER(PG_slab)", usually once in module_init.
 */

/** Name of the filter entry symbol for ABI major 1. */
#define VMDUMP_FILTER_ENTRY_V1 "vmdump_filter_entry_v1"

/** Bits of `vmdump_filter_v1.needs`: what a filter looks at; 0 = the pfn and physical address only. */
#define VMDUMP_FILTER_NEEDS_PAGE 0x1u        /* the page bytes: a content filter, runs on the workers after the zero-page check */
#define VMDUMP_FILTER_NEEDS_STRUCT_PAGE 0x2u /* the page's struct page bytes (SIZE(page)): a metadata filter, runs before any page byte is read */

/** What classify decides for a page. */
enum vmdump_verdict {
    VMDUMP_KEEP = 0,   /* the page stays in the dump (as far as this filter is concerned) */
    VMDUMP_EXCLUDE = 1 /* the page is left out of the dump */
};

/**
 * One page, as given to classify. Built by the host, valid only during the
 * classify call: a filter keeps no pointer into it.
 */
struct vmdump_page {
    uint32_t struct_size;        /* sizeof(struct vmdump_page) of the host: read a field
                                    appended by a later minor only when this covers it */
    uint32_t reserved;           /* 0 */
    uint64_t pfn;                /* page frame number in the dumped machine */
    uint64_t paddr;              /* physical address of the page's first byte */
    const uint8_t *data;         /* the page bytes when NEEDS_PAGE, else NULL */
    size_t data_len;             /* bytes at `data` (the page size), 0 when NULL */
    const uint8_t *struct_page;  /* the page's struct page bytes when NEEDS_STRUCT_PAGE, else NULL */
    size_t struct_page_len;      /* bytes at `struct_page` (SIZE(page)), 0 when NULL */
};

/**
 * A filter plugin, ABI 1.0. Returned by vmdump_filter_entry_v1.
 * Append-only: minor versions add fields after `module_finalize`.
 */
struct vmdump_filter_v1 {
    uint64_t magic;          /* VMDUMP_PLUGIN_MAGIC */
    uint32_t abi_major;      /* VMDUMP_ABI_MAJOR the plugin was built with */
    uint32_t abi_minor;      /* VMDUMP_ABI_MINOR the plugin was built with */
    uint32_t struct_size;    /* sizeof(struct vmdump_filter_v1) of the plugin */
    uint32_t flags;          /* no flags are defined in 1.0: write 0 */
    const char *name;        /* short unique key used in profiles: "pfn-ranges" */
    const char *version;     /* the plugin's own version, free text */
    const char *description; /* one line for `vmdump plugins`; may be NULL */
    uint32_t needs;          /* VMDUMP_FILTER_NEEDS_* bits, or 0 */
    uint32_t reserved;       /* 0 */

    /**
     * Validate `params` and build the shared module state into `*module`.
     * Unknown keys must be refused with VMDUMP_ERR_INVALID_PARAM and a message
     * naming the key. `host` stays valid until module_finalize: read the
     * VMCOREINFO keys the filter depends on here. Required.
     */
    int (*module_init)(const struct vmdump_params *params, const struct vmdump_host_api *host,
                       void **module, struct vmdump_error *err);

    /** Create one per-thread context into `*ctx` (once per worker or pass thread). Required. */
    int (*ctx_init)(const void *module, void **ctx, struct vmdump_error *err);

    /**
     * Decide on one page: write VMDUMP_KEEP or VMDUMP_EXCLUDE into `*verdict`
     * and return VMDUMP_OK. The host sets `*verdict` to VMDUMP_KEEP before the
     * call. `page` and the bytes it points to are valid only during the call.
     * On failure the page is kept and the filter disabled. Required.
     */
    int (*classify)(void *ctx, const struct vmdump_page *page, uint32_t *verdict,
                    struct vmdump_error *err);

    /** Free a context. Called exactly once per successful ctx_init. Required. */
    void (*ctx_finalize)(void *ctx);

    /** Free the module state, after all its contexts. Required. */
    void (*module_finalize)(void *module);
};

/** The entry point every filter plugin exports (C linkage, default visibility). */
const struct vmdump_filter_v1 *vmdump_filter_entry_v1(uint32_t host_abi_major,
                                                      uint32_t host_abi_minor);

#ifdef __cplusplus
}
#endif

#endif /* VMDUMP_PLUGIN_H */
