/*
 * page_bench.c - per-page speed and size of zlib compressors on the pages of
 * a real vmcore, one thread. A benchmark, not a test.
 *
 * SPDX-License-Identifier: MIT OR Apache-2.0
 *
 *     page_bench VMCORE SPEC...
 *
 * The pages are the distinct non-zero 4 KiB pages of the ELF vmcore's
 * PT_LOAD segments (what `-d 1` compresses). A SPEC is
 *   compress2:L   the system zlib's compress2() at level L, per page, as
 *                 makedumpfile -c does (a deflateInit and deflateEnd each)
 *   FILE.so:L     a vmdump compressor plugin through its C ABI, as the host
 *                 drives it (one context, params level=L)
 * Each is run 5 times, in turns; the median run is printed as MiB/s of
 * input, and the bytes as the host stores them (a page that does not shrink
 * counts 4096). Every plugin's output is checked once with the system
 * zlib's uncompress().
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <zlib.h>

#include "vmdump_plugin.h"

#define PAGE 4096
#define ROUNDS 5

struct spec {
    const char *text;
    const struct vmdump_compressor_v1 *table; /* NULL: compress2 */
    void *ctx;
    int level;
    double seconds[ROUNDS];
    size_t bytes;
};

static void die(const char *what)
{
    perror(what);
    exit(1);
}

/* The distinct (by pfn) non-zero pages of the PT_LOADs, copied out. */
static uint8_t *load_pages(const char *path, size_t *count)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st))
        die(path);
    const uint8_t *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED)
        die("mmap");
    const Elf64_Ehdr *eh = (const void *)map;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64) {
        fprintf(stderr, "%s: not an ELF64 vmcore\n", path);
        exit(1);
    }
    uint64_t max_pfn = 0;
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        const Elf64_Phdr *ph = (const void *)(map + eh->e_phoff + (size_t)i * eh->e_phentsize);
        if (ph->p_type == PT_LOAD && ph->p_paddr != UINT64_MAX && (ph->p_paddr + ph->p_filesz) / PAGE > max_pfn)
            max_pfn = (ph->p_paddr + ph->p_filesz) / PAGE;
    }
    uint8_t *seen = calloc(max_pfn / 8 + 1, 1);
    size_t cap = 1024, n = 0;
    uint8_t *pages = malloc(cap * PAGE);
    static const uint8_t zero[PAGE];
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        const Elf64_Phdr *ph = (const void *)(map + eh->e_phoff + (size_t)i * eh->e_phentsize);
        if (ph->p_type != PT_LOAD || ph->p_paddr == UINT64_MAX)
            continue;
        for (uint64_t off = 0; off + PAGE <= ph->p_filesz; off += PAGE) {
            uint64_t pfn = (ph->p_paddr + off) / PAGE;
            const uint8_t *page = map + ph->p_offset + off;
            if ((seen[pfn / 8] >> pfn % 8) & 1 || !memcmp(page, zero, PAGE))
                continue;
            seen[pfn / 8] |= (uint8_t)(1 << pfn % 8);
            if (n == cap && !(pages = realloc(pages, (cap *= 2) * PAGE)))
                die("realloc");
            memcpy(pages + n++ * PAGE, page, PAGE);
        }
    }
    free(seen);
    munmap((void *)map, (size_t)st.st_size);
    close(fd);
    *count = n;
    return pages;
}

static void host_log(void *host, enum vmdump_log_level level, const char *message)
{
    (void)host;
    fprintf(stderr, "plugin (level %d): %s\n", level, message);
}

static int64_t host_vmcoreinfo(void *host, const char *key, char *buf, size_t len)
{
    (void)host, (void)key, (void)buf, (void)len;
    return -1;
}

static const struct vmdump_host_api host_api = {
    .struct_size = sizeof host_api, .abi_minor = VMDUMP_ABI_MINOR,
    .log = host_log, .vmcoreinfo = host_vmcoreinfo,
};

static void open_spec(struct spec *s)
{
    char *colon = strrchr(s->text, ':');
    if (!colon) {
        fprintf(stderr, "%s: want NAME:LEVEL\n", s->text);
        exit(2);
    }
    s->level = atoi(colon + 1);
    char *name = strndup(s->text, (size_t)(colon - s->text));
    if (!strcmp(name, "compress2"))
        return;
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "%s\n", dlerror());
        exit(1);
    }
    const struct vmdump_compressor_v1 *(*entry)(uint32_t, uint32_t);
    *(void **)&entry = dlsym(lib, VMDUMP_COMPRESSOR_ENTRY_V1);
    if (!entry || !(s->table = entry(VMDUMP_ABI_MAJOR, VMDUMP_ABI_MINOR))) {
        fprintf(stderr, "%s: no compressor entry\n", name);
        exit(1);
    }
    struct vmdump_param param = { "level", colon + 1 };
    struct vmdump_params params = { &param, 1 };
    struct vmdump_error err = { { 0 } };
    void *module;
    if (s->table->module_init(&params, &host_api, &module, &err)
        || s->table->ctx_init(module, &s->ctx, &err)) {
        fprintf(stderr, "%s: %s\n", s->text, err.message);
        exit(1);
    }
}

static size_t compress_page(struct spec *s, const uint8_t *page, uint8_t *out, size_t cap)
{
    if (!s->table) {
        uLongf len = cap;
        if (compress2(out, &len, page, PAGE, s->level) != Z_OK)
            return PAGE;
        return len;
    }
    struct vmdump_error err;
    size_t len = cap;
    if (s->table->compress(s->ctx, page, PAGE, out, &len, &err)) {
        fprintf(stderr, "%s: %s\n", s->text, err.message);
        exit(1);
    }
    if (s->table->reset)
        s->table->reset(s->ctx, &err);
    return len;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s VMCORE SPEC... (SPEC: compress2:L or FILE.so:L)\n", argv[0]);
        return 2;
    }
    size_t n;
    uint8_t *pages = load_pages(argv[1], &n);
    int count = argc - 2;
    struct spec *specs = calloc((size_t)count, sizeof *specs);
    static uint8_t out[2 * PAGE], back[PAGE];
    for (int i = 0; i < count; i++) {
        specs[i].text = argv[i + 2];
        open_spec(&specs[i]);
        /* Once untimed: warm, and every page must be one zlib stream. */
        for (size_t p = 0; p < n; p++) {
            size_t len = compress_page(&specs[i], pages + p * PAGE, out, sizeof out);
            uLongf back_len = PAGE;
            if (uncompress(back, &back_len, out, len) != Z_OK || back_len != PAGE
                || memcmp(back, pages + p * PAGE, PAGE)) {
                fprintf(stderr, "%s: page %zu is not a zlib stream of the page\n", specs[i].text, p);
                return 1;
            }
        }
    }
    for (int round = 0; round < ROUNDS; round++)
        for (int k = 0; k < count; k++) {
            struct spec *s = &specs[(k + round) % count]; /* each round starts elsewhere */
            size_t bytes = 0;
            double start = now();
            for (size_t p = 0; p < n; p++) {
                size_t len = compress_page(s, pages + p * PAGE, out, sizeof out);
                bytes += len < PAGE ? len : PAGE;
            }
            s->seconds[round] = now() - start;
            s->bytes = bytes;
        }
    printf("%zu non-zero pages of %s (%.1f MiB), median of %d runs, 1 thread\n", n, argv[1],
           (double)(n * PAGE) / (1 << 20), ROUNDS);
    printf("%-56s %10s %14s\n", "compressor:level", "MiB/s", "bytes");
    for (int i = 0; i < count; i++) {
        qsort(specs[i].seconds, ROUNDS, sizeof(double), by_value);
        printf("%-56s %10.1f %14zu\n", specs[i].text,
               (double)(n * PAGE) / (1 << 20) / specs[i].seconds[ROUNDS / 2], specs[i].bytes);
    }
    return 0;
}
