/* The search trees elfutils 0.192's libdw.a and libelf.a call (eu_tsearch
 * and the rest, elfutils' lib/eu-search.c) but Debian 13's libdw-dev and
 * libelf-dev do not ship (that code goes into the shared libraries only), for
 * static builds of upstream makedumpfile against them
 * (scripts/lib/fixture.sh, build_upstream_makedumpfile). A tree is a
 * struct whose first member is the root pointer (then a lock when elfutils
 * is built thread-safe, unused here: makedumpfile reads ELF and DWARF
 * from one thread), so each call is glibc's own on that pointer. */
#define _GNU_SOURCE
#include <search.h>
#include <stddef.h>

typedef int (*compare_fn)(const void *, const void *);

void *eu_tsearch(const void *key, void **tree, compare_fn compare) { return tsearch(key, tree, compare); }
void *eu_tfind(const void *key, void **tree, compare_fn compare) { return tfind(key, tree, compare); }
void *eu_tdelete(const void *key, void **tree, compare_fn compare) { return tdelete(key, tree, compare); }

void eu_tdestroy(void **tree, void (*free_node)(void *))
{
    tdestroy(*tree, free_node);
    *tree = NULL;
}

void eu_search_tree_init(void **tree) { *tree = NULL; }
void eu_search_tree_fini(void **tree) { eu_tdestroy(tree, NULL); }
