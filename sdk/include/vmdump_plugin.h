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

#ifdef __cplusplus
}
#endif

#endif /* VMDUMP_PLUGIN_H */
