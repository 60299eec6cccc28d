/*
 * unit.h: a minimal TAP harness for the src/core unit tests.
 *
 * Each test program prints one "ok N - name" or "not ok N - name" line per
 * check, "# ..." diagnostics, and "1..N" at the end; it exits 1 if any check
 * failed. scripts/run-tests.sh counts the lines.
 *
 *   UNIT_CHECK(cond, "name %d", i);      one check
 *   UNIT_SKIP("reason");                 one skipped check (counts as ok)
 *   return unit_done();                  at the end of main
 *
 * Test data from ../shared/data is found through unit_shared_data(), which
 * returns NULL when it is absent; unit_shared_data_or_skip("what") returns
 * the same and, where it is absent, reports one skipped check saying what
 * was not run.
 */
#ifndef MCC_UNIT_H
#define MCC_UNIT_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "testfile.h"

static int	unit_n = 0;
static int	unit_failed = 0;

static inline int
unit_check(int cond, const char *file, int line, const char *fmt,...)
{
	va_list		ap;

	unit_n++;
	if (!cond)
		unit_failed++;
	printf("%sok %d - ", cond ? "" : "not ", unit_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond)
		printf("#   failed at %s:%d\n", file, line);
	fflush(stdout);
	return cond;
}

#define UNIT_CHECK(cond, ...) unit_check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

#define UNIT_SKIP(...) \
	do { unit_n++; printf("ok %d # SKIP ", unit_n); printf(__VA_ARGS__); printf("\n"); } while (0)

static inline int
unit_done(void)
{
	printf("1..%d\n", unit_n);
	if (unit_failed)
		printf("# %d of %d checks failed\n", unit_failed, unit_n);
	return unit_failed ? 1 : 0;
}

/*
 * The shared test data folder: $MCC_SHARED_DATA if set, else ../shared/data
 * relative to the repository root (tests run from the root), else NULL.
 */
static inline const char *
unit_shared_data(void)
{
	static const char *const candidates[] = {"../shared/data", "../../shared/data"};
	const char *env = getenv("MCC_SHARED_DATA");
	struct stat st;

	if (env && *env)
		return stat(env, &st) == 0 ? env : NULL;
	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++)
		if (stat(candidates[i], &st) == 0 && S_ISDIR(st.st_mode))
			return candidates[i];
	return NULL;
}

/*
 * unit_shared_data() for a test that cannot run without it: where the data
 * is absent, one skipped check naming what was not run (so that every such
 * skip says the same thing about where the data is looked for).
 */
static inline const char *
unit_shared_data_or_skip(const char *what)
{
	const char *data = unit_shared_data();

	if (data == NULL)
		UNIT_SKIP("shared test data absent (../shared/data or $MCC_SHARED_DATA): %s", what);
	return data;
}

#endif							/* MCC_UNIT_H */
