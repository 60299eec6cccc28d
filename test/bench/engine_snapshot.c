/*
 * engine_snapshot.c: where the read of a gallery cache's snapshot spends
 * its time (issue 19, part 2: serving from the snapshot after a restart),
 * in process (no PostgreSQL).
 *
 *   build/bench/engine_snapshot [--templates N] [--distinct M] [--threads T]
 *                               [--rounds R] [--dir D]
 *
 * Builds a cache of N rows (template i % M of M distinct synthetic
 * templates under key i, tuple id i + 1), writes its snapshot to
 * D/bench.snap (default /tmp), then R times reads it back with
 * eng_snap_read_file on T threads (the file is in the page cache: it was
 * just written; the read after a restart finds it there too unless the
 * machine rebooted) and prints the wall time and its stages as the engine
 * logs them: the arrays read into place with their CRC, the cache's
 * rebuild (eng_cache_restore_end), the tuple id index, and the CPU
 * seconds of all threads (the wall time depends on what else runs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine_cachefill.h"
#include "eng_cache.h"
#include "eng_snapfile.h"
#include "mcc_crc32c.h"
#include "testargs.h"
#include "testclock.h"

int
main(int argc, char **argv)
{
	int			n = 1000000;
	int			distinct = 2000;
	int			threads = 2;
	int			rounds = 3;
	const char *dir = "/tmp";
	char		path[4096];
	const eng_snap_ident id = {.db_oid = 1, .rel_oid = 42, .signature = 7, .system_id = 9,
	.profile_id = 0};
	tl_tpl	   *t;
	eng_cache  *c;
	double		per_row;
	uint8_t    *buf;
	size_t		len;
	mcc_error	err;
	double		t0;
	const targ_opt opts[] = {
		OPT_INT("--templates", &n, "N"), OPT_INT("--distinct", &distinct, "M"),
		OPT_INT("--threads", &threads, "T"), OPT_INT("--rounds", &rounds, "R"),
		OPT_STR("--dir", &dir, "D"), OPT_END
	};

	targ_parse(argc, argv, opts);
	if ((c = tl_bench_cache(n, &distinct, &t)) == NULL)
		return 1;
	per_row = (double) c->soa.n_cyl / n;
	snprintf(path, sizeof(path), "%s/bench.snap", dir);
	if (eng_snap_encode(c, &id, 1, 1, &buf, &len, &err) != MCC_OK ||
		eng_snap_write_file(path, buf, len, &err) != MCC_OK)
	{
		fprintf(stderr, "snapshot: %s\n", err.message);
		return 1;
	}
	eng_cache_free(c);
	printf("# %d rows (%d distinct synthetic templates, %.1f cylinders each), snapshot %.1f MB, "
		   "%d thread(s)\n", n, distinct, per_row, len / 1048576.0, threads);
	for (int r = 0; r < rounds; r++)
	{
		eng_snap   *s = NULL;
		bool		missing;

		double		c0 = tclock_process_cpu_s();

		mcc_error_clear(&err);
		t0 = tclock_wall_s();
		if (eng_snap_read_file(path, &id, threads, &s, &missing, &err) != MCC_OK)
		{
			fprintf(stderr, "read: %s\n", err.message);
			return 1;
		}
		t0 = tclock_wall_s() - t0;
		c0 = tclock_process_cpu_s() - c0;
		printf("read_file %.3f s (%.0f MB/s): arrays + CRC %.3f s, rebuild %.3f s, "
			   "tid index %.3f s, %d thread(s); %.3f CPU s (%.0f MB per CPU-second)\n", t0,
			   len / 1048576.0 / t0, s->io_s, s->rebuild_s, s->index_s, s->threads, c0,
			   len / 1048576.0 / c0);
		eng_snap_free(s);
	}
	unlink(path);
	free(buf);
	return 0;
}
