/*
 * mcc_cpu_kernel.c: the run-time choice of a CPU kernel variant
 * (mcc_cpu_kernel.h).
 */
#include "mcc_cpu_kernel.h"

#include <string.h>

/* Entry k's head. */
static const mcc_kernel_head *
head(const mcc_kernel_table *t, int k)
{
	return (const mcc_kernel_head *) ((const char *) t->table + (size_t) k * t->size);
}

int
mcc_kernel_always(void)
{
	return 1;
}

int
mcc_kernel_never(void)
{
	return 0;
}

/*
 * What this CPU and OS support, for the kernels' usable(): one definition
 * per check; off x86, every check is 0.
 */
#if defined(__x86_64__) || defined(__i386__)
#define CPU_CHECK(name, cond) \
	int name(void) { __builtin_cpu_init(); return (cond); }
#define HAS(feature) __builtin_cpu_supports(feature)
#else
#define CPU_CHECK(name, cond) \
	int name(void) { return 0; }
#endif

CPU_CHECK(mcc_kernel_avx2, HAS("avx2"))
CPU_CHECK(mcc_kernel_avx512bw, HAS("avx512f") && HAS("avx512bw"))
CPU_CHECK(mcc_cpu_has_popcnt, HAS("popcnt"))
CPU_CHECK(mcc_cpu_has_avx2, HAS("popcnt") && HAS("avx2"))
CPU_CHECK(mcc_cpu_has_avx512, HAS("popcnt") && HAS("avx512f") && HAS("avx512bw") &&
		  HAS("avx512vl") && HAS("avx512vpopcntdq"))

const void *
mcc_kernel_current(mcc_kernel_table *t)
{
	int			k = __atomic_load_n(&t->index, __ATOMIC_ACQUIRE);

	if (k < 0)
	{
		/* the last entry is the portable one: always usable */
		for (k = 0; k < t->n - 1; k++)
			if (head(t, k)->usable())
				break;
		__atomic_store_n(&t->index, k, __ATOMIC_RELEASE);
	}
	return head(t, k);
}

int
mcc_kernel_force(mcc_kernel_table *t, const char *name)
{
	if (name == NULL)
	{
		__atomic_store_n(&t->index, -1, __ATOMIC_RELEASE);
		return 0;
	}
	for (int k = 0; k < t->n; k++)
		if (strcmp(head(t, k)->name, name) == 0)
		{
			if (!head(t, k)->usable())
				return -1;
			__atomic_store_n(&t->index, k, __ATOMIC_RELEASE);
			return 0;
		}
	return -1;
}

/* The first usable kernel id of a list, best first (mcc_cpu_kernel.h). */
int
mcc_kernel_first(const int *order, int n, int (*usable) (int), int fallback)
{
	for (int i = 0; i < n; i++)
		if (usable(order[i]))
			return order[i];
	return fallback;
}
