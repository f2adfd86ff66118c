/*
 * vmdump_plugin.h - the vmdump plugin contract, ABI version 1.1.
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
#define VMDUMP_ABI_MINOR 1

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
    VMDUMP_ERR_NO_MEMORY = 6,
    /** ABI 1.1, kernel services: no such symbol, type or member in the dumped kernel. */
    VMDUMP_ERR_NOT_FOUND = 7,
    /** ABI 1.1, kernel services: the memory asked for is not in the dump, or not mapped. */
    VMDUMP_ERR_UNREADABLE = 8,
    /** ABI 1.1, kernel services: the dump cannot give this service (no kallsyms, no BTF,
        no page tables of this architecture); the message of the hook's error says which. */
    VMDUMP_ERR_UNAVAILABLE = 9
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
 *   VMDUMP_FILTER_NEEDS_KERNEL       (ABI 1.1, with any of the above) a
 *                                    `prepare` hook runs once before the
 *                                    page pass, with the kernel services
 *                                    below: it may decide everything there.
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
#define VMDUMP_FILTER_NEEDS_KERNEL 0x4u      /* ABI 1.1: the filter's `prepare` hook must run (it reads the kernel
                                                and marks pages); a 1.0 host refuses the bit, so such a filter
                                                never runs where its hook would be ignored */

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

/*
 * Kernel services (ABI 1.1)
 * -------------------------
 * What the `prepare` hook gets: the dumped kernel's symbols (kallsyms read
 * from the dump), its types (BTF read from the dump), reads of its memory,
 * and the marks a filter makes. Every name is looked up in the dumped
 * kernel itself: no vmlinux is needed. Each call returns a vmdump_status:
 * VMDUMP_OK, or VMDUMP_ERR_NOT_FOUND, VMDUMP_ERR_UNREADABLE,
 * VMDUMP_ERR_UNAVAILABLE or VMDUMP_ERR_INVALID_PARAM (a bad argument).
 * The host writes out-parameters only on success.
 *
 * Marks:
 * - keep: the pfns stay in the dump whatever the dump level's classes say
 *   (user pages at -d 31, say) and whatever another filter's marks say;
 * - exclude: the pfns are left out, unless a filter keeps them;
 * - erase: bytes are overwritten (with `fill`, or zeros for
 *   VMDUMP_ERASE_NULLIFY) in the page data before the zero-page check and
 *   compression, and recorded in the dump's eraseinfo as makedumpfile does
 *   ("erase WHAT size N" summed per WHAT, or "erase WHAT nullify"), which
 *   libkdumpfile shows as `file.eraseinfo.raw`. A page left out of the dump
 *   is not written at all, erased or not.
 */

/** Address spaces of `read` and `erase`. */
enum vmdump_space {
    VMDUMP_SPACE_PHYS = 0,  /* physical addresses of the dumped machine */
    VMDUMP_SPACE_KVIRT = 1  /* kernel virtual addresses, through the kernel's page tables */
};

/** `fill` of `erase`: zeros, recorded as "nullify" (makedumpfile's word for pointers). */
#define VMDUMP_ERASE_NULLIFY 0x100u

/** Called by `user_pages` for each run of mapped user pages, in increasing address order. */
typedef int (*vmdump_user_page_fn)(void *arg, uint64_t vaddr, uint64_t pfn, uint64_t pages);

struct vmdump_kernel {
    uint32_t struct_size; /* sizeof(struct vmdump_kernel) of the host */
    uint32_t reserved;    /* 0 */
    void *host;           /* opaque, passed back to every call below */

    /**
     * The symbol `name` of the kernel (or of a loaded module): its address,
     * and in `*size` the bytes to the next symbol (kallsyms keeps no sizes;
     * 0 for the last). A global symbol wins over static ones of that name.
     */
    int (*symbol)(void *host, const char *name, uint64_t *address, uint64_t *size);

    /**
     * The size of a type by its C name: "struct task_struct", "union
     * thread_union", a typedef ("pgd_t") or a base type ("unsigned long");
     * a bare name ("task_struct") is tried as a struct or union first.
     */
    int (*type_size)(void *host, const char *type, uint64_t *size);

    /**
     * The byte offset and size of `member` in the struct or union `type`
     * (named as for type_size), and its type's C name ("struct mm_struct *",
     * "char [16]", "pgd_t *") into `type_name` (NUL-terminated, cut to
     * `type_name_len`; NULL for none). `member` may be nested ("signal.rlim":
     * members of members, not through pointers) and goes through anonymous
     * structs and unions as C does. A bitfield is refused
     * (VMDUMP_ERR_INVALID_PARAM): it has no byte offset.
     */
    int (*member)(void *host, const char *type, const char *member, uint64_t *offset, uint64_t *size,
                  char *type_name, size_t type_name_len);

    /** Reads `len` bytes at `addr` of `space` into `buf` (any length, across pages). */
    int (*read)(void *host, uint32_t space, uint64_t addr, void *buf, size_t len);

    /**
     * Walks the user half of the page tables whose top table is at kernel
     * virtual address `pgd` (an `mm_struct`'s `pgd`), calling `visit` for
     * each run of present pages: `pages` base pages from user address
     * `vaddr`, physically contiguous from `pfn` (a huge page is one run).
     * A nonzero return from `visit` stops the walk and is returned.
     * VMDUMP_ERR_UNAVAILABLE on architectures the host does not walk.
     */
    int (*user_pages)(void *host, uint64_t pgd, vmdump_user_page_fn visit, void *arg);

    /** Marks `count` pfns from `first_pfn` to keep. */
    int (*keep)(void *host, uint64_t first_pfn, uint64_t count);

    /** Marks `count` pfns from `first_pfn` to leave out. */
    int (*exclude)(void *host, uint64_t first_pfn, uint64_t count);

    /**
     * Erases `len` bytes at `addr` of `space` with `fill` (a byte value, or
     * VMDUMP_ERASE_NULLIFY), recorded in eraseinfo under `what` (the
     * expression that named them, "init_task.comm"; no spaces or newlines).
     * A kernel virtual range is translated page by page: an unmapped page
     * fails the call (VMDUMP_ERR_UNREADABLE) and nothing of it is erased.
     */
    int (*erase)(void *host, uint32_t space, uint64_t addr, uint64_t len, uint32_t fill, const char *what);
};

/**
 * A filter plugin, ABI 1.1 (1.0 ends at `module_finalize`). Returned by
 * vmdump_filter_entry_v1. Append-only: minor versions add fields at the end.
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
     * On failure the page is kept and the filter disabled. Required, but for
     * a filter that decides in `prepare` alone (`needs` is exactly
     * VMDUMP_FILTER_NEEDS_KERNEL): NULL there means no page is ever asked.
     */
    int (*classify)(void *ctx, const struct vmdump_page *page, uint32_t *verdict,
                    struct vmdump_error *err);

    /** Free a context. Called exactly once per successful ctx_init. Required. */
    void (*ctx_finalize)(void *ctx);

    /** Free the module state, after all its contexts. Required. */
    void (*module_finalize)(void *module);

    /* ---- ABI 1.1: read only when struct_size covers them ---- */

    /**
     * The hook before the page pass (`needs` has VMDUMP_FILTER_NEEDS_KERNEL).
     * Called once, after module_init and before any ctx_init, on one thread,
     * with the module state writable: the filter walks kernel structures
     * through `kernel` and marks pfns to keep or exclude and bytes to erase.
     * `kernel` is valid only during the call. On failure the host drops every
     * mark this call made (its erasures too), disables the filter and reports
     * it; the dump goes on. Required when NEEDS_KERNEL is set, else ignored.
     */
    int (*prepare)(void *module, const struct vmdump_kernel *kernel, struct vmdump_error *err);
};

/** The entry point every filter plugin exports (C linkage, default visibility). */
const struct vmdump_filter_v1 *vmdump_filter_entry_v1(uint32_t host_abi_major,
                                                      uint32_t host_abi_minor);

#ifdef __cplusplus
}
#endif

#endif /* VMDUMP_PLUGIN_H */
