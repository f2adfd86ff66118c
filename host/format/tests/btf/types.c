/* Types whose BTF gcc -gbtf writes, for tests/btf_gcc.rs and the btf fuzz
 * seeds (scripts/fuzz.sh): nested anonymous unions and structs, bitfields,
 * arrays, qualifiers, typedefs, function pointers, enums of both widths.
 * With -DPRINT_LAYOUT it prints what the compiler itself says of them. */
#include <stddef.h>

typedef unsigned long ulong;
enum color { RED, GREEN = 5, BLUE = -1 };
enum wide { WIDE_SMALL = 1, WIDE_BIG = 0x100000000L };
struct inner {
	int a : 3, b : 5;
	char name[16];
};
struct outer {
	ulong flags;
	union {
		struct inner in;
		long raw;
		struct {
			short lo, hi;
		};
	};
	const volatile struct outer *next;
	enum color c;
	enum wide w;
	void (*fn)(int, char *);
	struct inner many[3];
};
typedef struct outer outer_t;

outer_t g_outer;
int use(struct outer *o) { return o->c; }

#ifdef PRINT_LAYOUT
#include <stdio.h>
#define OFF(t, m) printf("%s.%s %zu\n", #t, #m, offsetof(struct t, m))
#define SIZE(t) printf("%s %zu\n", #t, sizeof(struct t))
int main(void)
{
	SIZE(outer);
	SIZE(inner);
	OFF(outer, flags);
	OFF(outer, in);
	OFF(outer, raw);
	OFF(outer, lo);
	OFF(outer, hi);
	OFF(outer, in.name);
	OFF(outer, next);
	OFF(outer, c);
	OFF(outer, w);
	OFF(outer, fn);
	OFF(outer, many);
	OFF(inner, name);
	/* GCC 12 writes enum wide as an 8-byte ENUM and leaves out the
	 * enumerator that does not fit 32 bits (ENUM64 came with GCC 13). */
	printf("GREEN %d\nBLUE %d\nWIDE_SMALL %d\n", GREEN, BLUE, (int)WIDE_SMALL);
	return 0;
}
#endif
