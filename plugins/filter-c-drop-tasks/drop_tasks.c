/*
 * drop_tasks.c - a vmdump filter plugin written in C against the ABI 1.1
 * header alone: leaves out of the dump the user memory of the processes
 * named by pid or comm, whatever the dump level keeps. For memory that must
 * not leave the machine (a database's buffers of customer data) when a dump
 * level keeps user pages (-d 1, -d 0).
 *
 * SPDX-License-Identifier: MIT OR Apache-2.0
 *
 * Build it alone with
 *
 *     cc -shared -fPIC -I../../sdk/include drop_tasks.c -o libvmdump_filter_drop_tasks.so
 *
 * Key "drop-tasks". Parameters (at least one): pid = N[,N...] (thread group
 * ids), comm = NAME[,NAME...] (task_struct.comm, as ps -o comm shows it).
 *
 * It decides in its prepare hook alone (needs is exactly
 * VMDUMP_FILTER_NEEDS_KERNEL, classify is NULL): it walks the task list
 * from init_task through task_struct.tasks, with the offsets of the dump's
 * BTF, and for each named process asks the host for the pages its
 * page tables map (mm->pgd), marking them to exclude. Every mapped page is
 * dropped, shared ones too (a library's text that other processes map).
 * Pages another filter keeps (keep-tasks) stay: keep wins.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmdump_plugin.h"

#define MAX_NAMES 64
#define COMM_LEN 16
#define MAX_TASKS (1u << 22) /* PID_MAX_LIMIT: a longer list loops */

struct module {
    const struct vmdump_host_api *host;
    unsigned long pids[MAX_NAMES];
    size_t npids;
    char comms[MAX_NAMES][COMM_LEN];
    size_t ncomms;
};

/* Offsets in the dumped kernel, from its BTF. */
struct layout {
    uint64_t tasks, tgid, tgid_size, comm, mm, pgd;
};

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

__attribute__((format(printf, 3, 4)))
static void say(const struct module *m, enum vmdump_log_level level, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (m->host && m->host->log)
        m->host->log(m->host->host, level, line);
}

/* Splits `value` at commas into pids or comms. */
static int parse_list(struct module *m, const char *key, const char *value, struct vmdump_error *err)
{
    int is_pid = !strcmp(key, "pid");
    const char *at = value;
    for (;;) {
        size_t len = strcspn(at, ",");
        while (len && *at == ' ')
            at++, len--;
        while (len && at[len - 1] == ' ')
            len--;
        if (is_pid) {
            char *end;
            errno = 0;
            unsigned long pid = strtoul(at, &end, 10);
            if (errno || end == at || (size_t)(end - at) != len || m->npids == MAX_NAMES)
                return fail(err, VMDUMP_ERR_INVALID_PARAM, "`pid`: `%.*s` is not a process id (at most %d)",
                            (int)len, at, MAX_NAMES);
            m->pids[m->npids++] = pid;
        } else {
            if (len == 0 || len >= COMM_LEN || m->ncomms == MAX_NAMES)
                return fail(err, VMDUMP_ERR_INVALID_PARAM,
                            "`comm`: `%.*s` is not a command name (1 to 15 bytes, at most %d)", (int)len, at,
                            MAX_NAMES);
            memcpy(m->comms[m->ncomms], at, len);
            m->comms[m->ncomms++][len] = '\0';
        }
        at += strcspn(at, ",");
        if (*at++ == '\0')
            return VMDUMP_OK;
    }
}

static int module_init(const struct vmdump_params *params, const struct vmdump_host_api *host,
                       void **module, struct vmdump_error *err)
{
    struct module *m = calloc(1, sizeof *m);
    if (!m)
        return fail(err, VMDUMP_ERR_NO_MEMORY, "out of memory");
    m->host = host;
    int rc = VMDUMP_OK;
    for (size_t i = 0; rc == VMDUMP_OK && params && i < params->count; i++) {
        const struct vmdump_param *p = &params->items[i];
        if (strcmp(p->key, "pid") && strcmp(p->key, "comm"))
            rc = fail(err, VMDUMP_ERR_INVALID_PARAM, "unknown key `%s` (accepted: pid, comm)", p->key);
        else
            rc = parse_list(m, p->key, p->value, err);
    }
    if (rc == VMDUMP_OK && m->npids == 0 && m->ncomms == 0)
        rc = fail(err, VMDUMP_ERR_INVALID_PARAM, "`pid` or `comm`: name at least one process");
    if (rc != VMDUMP_OK) {
        free(m);
        return rc;
    }
    *module = m;
    return VMDUMP_OK;
}

static int ctx_init(const void *module, void **ctx, struct vmdump_error *err)
{
    (void)module, (void)err;
    *ctx = NULL; /* never asked about a page: nothing per thread */
    return VMDUMP_OK;
}

static void ctx_finalize(void *ctx) { (void)ctx; }

static void module_finalize(void *module) { free(module); }

static int member(const struct vmdump_kernel *k, const char *type, const char *name, uint64_t *offset,
                  uint64_t *size, struct vmdump_error *err)
{
    uint64_t ignored;
    int rc = k->member(k->host, type, name, offset, size ? size : &ignored, NULL, 0);
    return rc ? fail(err, rc, "member %s of %s: not in the dump's BTF (status %d)", name, type, rc) : VMDUMP_OK;
}

static int read_kvirt(const struct vmdump_kernel *k, uint64_t addr, void *buf, size_t len,
                      struct vmdump_error *err)
{
    int rc = k->read(k->host, VMDUMP_SPACE_KVIRT, addr, buf, len);
    return rc ? fail(err, rc, "read of %zu bytes at %#llx (status %d)", len, (unsigned long long)addr, rc)
              : VMDUMP_OK;
}

static int picks(const struct module *m, unsigned long tgid, const char *comm)
{
    for (size_t i = 0; i < m->npids; i++)
        if (m->pids[i] == tgid)
            return 1;
    for (size_t i = 0; i < m->ncomms; i++)
        if (!strcmp(m->comms[i], comm))
            return 1;
    return 0;
}

struct dropping {
    const struct vmdump_kernel *kernel;
    uint64_t pages;
    int status;
};

/* The host's visitor: every run of mapped pages is excluded as it comes. */
static int drop_run(void *arg, uint64_t vaddr, uint64_t pfn, uint64_t pages)
{
    struct dropping *d = arg;
    (void)vaddr;
    d->status = d->kernel->exclude(d->kernel->host, pfn, pages);
    d->pages += pages;
    return d->status;
}

static int drop_process(const struct module *m, const struct vmdump_kernel *k, const struct layout *l,
                        uint64_t mm, unsigned long tgid, const char *comm, struct vmdump_error *err)
{
    uint64_t pgd;
    int rc = read_kvirt(k, mm + l->pgd, &pgd, sizeof pgd, err);
    if (rc)
        return rc;
    struct dropping d = {k, 0, VMDUMP_OK};
    rc = k->user_pages(k->host, pgd, drop_run, &d);
    if (rc)
        return fail(err, rc, "pid %lu (%s): its page tables at %#llx could not be walked (status %d%s)", tgid,
                    comm, (unsigned long long)pgd, rc, d.status ? ", the host refused an exclude" : "");
    say(m, VMDUMP_LOG_INFO, "pid %lu (%s): %llu mapped pages dropped", tgid, comm, (unsigned long long)d.pages);
    return VMDUMP_OK;
}

static int prepare(void *module, const struct vmdump_kernel *k, struct vmdump_error *err)
{
    const struct module *m = module;
    struct layout l;
    uint64_t init_task, ignored;
    int rc;
    if ((rc = member(k, "struct task_struct", "tasks", &l.tasks, NULL, err)) ||
        (rc = member(k, "struct task_struct", "tgid", &l.tgid, &l.tgid_size, err)) ||
        (rc = member(k, "struct task_struct", "comm", &l.comm, NULL, err)) ||
        (rc = member(k, "struct task_struct", "mm", &l.mm, NULL, err)) ||
        (rc = member(k, "struct mm_struct", "pgd", &l.pgd, NULL, err)))
        return rc;
    if ((rc = k->symbol(k->host, "init_task", &init_task, &ignored)))
        return fail(err, rc, "symbol init_task: not in the dump's kallsyms (status %d)", rc);
    if (l.tgid_size > 4)
        return fail(err, VMDUMP_ERR_FAILED, "task_struct.tgid is %llu bytes, not a pid_t",
                    (unsigned long long)l.tgid_size);
    uint64_t head = init_task + l.tasks, entry = head, last_mm = 0;
    /* Brent's cycle check: `mark` moves to the entry at steps 1, 2, 4, 8...;
     * meeting it again means a loop that misses the head. */
    uint64_t mark = head, power = 1, since = 0;
    unsigned dropped = 0;
    for (uint32_t n = 0;; n++) {
        uint64_t task = entry - l.tasks, mm;
        uint32_t tgid = 0;
        char comm[COMM_LEN];
        if ((rc = read_kvirt(k, task + l.tgid, &tgid, l.tgid_size, err)) ||
            (rc = read_kvirt(k, task + l.comm, comm, sizeof comm, err)) ||
            (rc = read_kvirt(k, task + l.mm, &mm, sizeof mm, err)))
            return rc;
        comm[COMM_LEN - 1] = '\0';
        /* Processes sharing one mm (CLONE_VM) are next to each other in the
         * list as a rule; an mm walked twice only marks its pages twice. */
        if (picks(m, tgid, comm) && mm && mm != last_mm) {
            if ((rc = drop_process(m, k, &l, mm, tgid, comm, err)))
                return rc;
            last_mm = mm;
            dropped++;
        }
        if ((rc = read_kvirt(k, entry, &entry, sizeof entry, err)))
            return rc;
        if (entry == head)
            break;
        if (++since == power)
            mark = entry, power *= 2, since = 0;
        else if (entry == mark)
            n = MAX_TASKS;
        if (n == MAX_TASKS || entry < l.tasks)
            return fail(err, VMDUMP_ERR_FAILED, "the task list from init_task does not come back to it");
    }
    if (dropped == 0)
        say(m, VMDUMP_LOG_WARN, "no process named by pid or comm has user memory: nothing dropped");
    return VMDUMP_OK;
}

static const struct vmdump_filter_v1 FILTER = {
    .magic = VMDUMP_PLUGIN_MAGIC,
    .abi_major = VMDUMP_ABI_MAJOR,
    .abi_minor = VMDUMP_ABI_MINOR,
    .struct_size = sizeof(struct vmdump_filter_v1),
    .name = "drop-tasks",
    .version = "1.0",
    .description = "leaves out the user pages of processes (written in C), param pid = N,N... and/or comm = NAME,...",
    .needs = VMDUMP_FILTER_NEEDS_KERNEL,
    .module_init = module_init,
    .ctx_init = ctx_init,
    .classify = NULL,
    .ctx_finalize = ctx_finalize,
    .module_finalize = module_finalize,
    .prepare = prepare,
};

const struct vmdump_filter_v1 *vmdump_filter_entry_v1(uint32_t host_abi_major, uint32_t host_abi_minor)
{
    /* A 1.0 host would never call prepare: this filter would do nothing. */
    if (host_abi_major != VMDUMP_ABI_MAJOR || host_abi_minor < 1)
        return NULL;
    return &FILTER;
}
