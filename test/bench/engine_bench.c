/*
 * engine_bench.c: throughput of the matcher engine (build/mcc_engine) with
 * several concurrent client connections, batching on and off.
 *
 *   build/bench/engine_bench [--templates N] [--distinct M] [--clients 1,4,16]
 *                            [--seconds S] [--threads T] [--k K] [--batch 64]
 *                            [--gpu auto|off|on]
 *
 * Starts the engine twice, with --max-batch B (batching on) and with
 * --max-batch 1 (off); each time loads one gallery of N templates (M distinct
 * synthetic impressions from mcc_synth, repeated under distinct keys: the
 * scan does the same work for a repeated template) and, for each client
 * count C, runs C connections that each send one-probe SEARCHes back to back
 * for S seconds. Prints requests/s, template comparisons/s, the engine's
 * CPU use (cores busy on average, from /proc) and comparisons per CPU second
 * (the figure that stays meaningful on a shared machine), and latencies.
 * --gpu is passed to the engine (MCC_ENGINE may name another binary); the
 * first search after the load is timed apart: with a GPU it waits for the
 * gallery's upload.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_client.h"
#include "mcc_synth.h"
#include "testargs.h"
#include "testclock.h"
#include "testsort.h"

typedef struct opts
{
	int			n;
	int			distinct;
	int			clients[8];
	int			n_clients;
	double		seconds;
	int			threads;
	uint32_t	k;
	int			batch;
	const char *gpu;
} opts;

static const mcc_gallery_id G = {1, 42, 7};
static tl_tpl *gallery_t;
static tl_tpl *probe_t;
static int	n_probes = 64;

typedef struct worker
{
	const char *sock;
	int			id;
	double		seconds;
	uint32_t	k;
	uint64_t	done;
	double	   *lat;			/* ms per request */
	size_t		n_lat;
	size_t		cap_lat;
	bool		failed;
} worker;

static atomic_int go;

/* One client: SEARCH, wait, repeat until time is up. */
static void *
client(void *arg)
{
	worker	   *w = arg;
	tc_conn		c = tc_connect(w->sock);
	eng_buf		b;
	tl_frame	f;
	uint64_t	rid = 0;
	int64_t		end;

	eng_buf_init(&b);
	if (c.fd < 0)
	{
		w->failed = true;
		return NULL;
	}
	while (!atomic_load(&go))
		usleep(100);
	end = tc_now_ms() + (int64_t) (w->seconds * 1000);
	while (tc_now_ms() < end)
	{
		double		t0;
		double		ms;
		int			p = (int) ((rid * 7 + (uint64_t) w->id * 13) % (uint64_t) n_probes);

		t0 = tclock_wall_ms();
		tl_search(&b, ++rid, &G, 1, w->k, 0.0f, 1, &probe_t[p]);
		if (!tc_send(&c, &b) || tc_await(&c, rid, &f, 600000) != 1 ||
			f.h.type != MCC_MSG_RESULT)
		{
			w->failed = true;
			break;
		}
		ms = tclock_wall_ms() - t0;
		if (w->n_lat == w->cap_lat)
		{
			w->cap_lat = w->cap_lat ? 2 * w->cap_lat : 256;
			w->lat = realloc(w->lat, w->cap_lat * sizeof(double));
		}
		w->lat[w->n_lat++] = ms;
		w->done++;
	}
	eng_buf_free(&b);
	tc_close(&c);
	return NULL;
}

/* CPU seconds (user + system) used so far by process pid, from /proc. */
static double
cpu_seconds(pid_t pid)
{
	char		path[64];
	char		buf[1024];
	FILE	   *f;
	char	   *p;
	unsigned long ut = 0;
	unsigned long st = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	if (fgets(buf, sizeof(buf), f) == NULL)
		buf[0] = '\0';
	fclose(f);
	/* fields after the command name (which may hold spaces) */
	p = strrchr(buf, ')');
	if (p == NULL ||
		sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return 0;
	return (double) (ut + st) / (double) sysconf(_SC_CLK_TCK);
}

/* Load the gallery: N rows, template i % distinct under key i. */
static bool
load(const char *sock, const opts *o, double *secs)
{
	tc_conn		c = tc_connect(sock);
	eng_buf		b;
	tl_frame	f;
	int64_t		keys[1000];
	uint64_t	xid[1000];
	tl_tpl		t[1000];
	int64_t		t0 = tc_now_ms();
	bool		ok;

	eng_buf_init(&b);
	tl_load_begin(&b, 1, &G, 1, (uint64_t) o->n);
	ok = tc_send(&c, &b);
	for (int i = 0; ok && i < o->n; i += 1000)
	{
		int			m = o->n - i < 1000 ? o->n - i : 1000;

		for (int j = 0; j < m; j++)
		{
			keys[j] = i + j;
			xid[j] = 3;
			t[j] = gallery_t[(i + j) % o->distinct];
		}
		tl_load_rows(&b, 1, m, keys, xid, NULL, t);
		ok = tc_send(&c, &b);
	}
	tl_load_end(&b, 1);
	ok = ok && tc_send(&c, &b) && tc_await(&c, 1, &f, 600000) == 1 &&
		f.h.type == MCC_MSG_LOADED;
	*secs = (double) (tc_now_ms() - t0) / 1000.0;
	eng_buf_free(&b);
	tc_close(&c);
	return ok;
}

/* One engine (batching on or off): load, then every client count. */
static void
run_engine(const opts *o, int max_batch)
{
	tc_engine	e;
	char		threads[16];
	char		batch[16];
	const char *args[] = {"--threads", threads, "--max-batch", batch,
	"--log-level", "info", "--gpu", o->gpu, NULL};
	double		load_s;
	int64_t		t0;
	tc_conn		c;
	eng_buf		b;
	tl_frame	f;

	memset(&e, 0, sizeof(e));
	snprintf(threads, sizeof(threads), "%d", o->threads);
	snprintf(batch, sizeof(batch), "%d", max_batch);
	if (!tc_engine_start(&e, args))
	{
		fprintf(stderr, "engine did not start\n");
		exit(1);
	}
	if (!load(e.sock, o, &load_s))
	{
		fprintf(stderr, "load failed\n");
		tc_engine_cleanup(&e);
		exit(1);
	}
	printf("# engine --threads %d --max-batch %d --gpu %s: loaded %d templates in %.1f s (%.0f rows/s)\n",
		   o->threads, max_batch, o->gpu, o->n, load_s, o->n / load_s);
	/* the first search waits for what follows a load (the GPU upload) */
	eng_buf_init(&b);
	c = tc_connect(e.sock);
	t0 = tc_now_ms();
	tl_search(&b, 2, &G, 1, o->k, 0.0f, 1, probe_t);
	if (!tc_send(&c, &b) || tc_await(&c, 2, &f, 600000) != 1 || f.h.type != MCC_MSG_RESULT)
		fprintf(stderr, "first search failed\n");
	printf("# first search after the load: %.3f s\n", (double) (tc_now_ms() - t0) / 1000.0);
	tc_close(&c);
	eng_buf_free(&b);
	for (int ci = 0; ci < o->n_clients; ci++)
	{
		int			nc = o->clients[ci];
		worker	   *w = calloc((size_t) nc, sizeof(worker));
		pthread_t  *th = calloc((size_t) nc, sizeof(pthread_t));
		uint64_t	total = 0;
		double	   *all;
		size_t		n_all = 0;
		bool		failed = false;

		double		cpu0;
		double		cpu;

		atomic_store(&go, 0);
		for (int i = 0; i < nc; i++)
		{
			w[i].sock = e.sock;
			w[i].id = i;
			w[i].seconds = o->seconds;
			w[i].k = o->k;
			pthread_create(&th[i], NULL, client, &w[i]);
		}
		usleep(200000);
		cpu0 = cpu_seconds(e.pid);
		atomic_store(&go, 1);
		for (int i = 0; i < nc; i++)
		{
			pthread_join(th[i], NULL);
			total += w[i].done;
			n_all += w[i].n_lat;
			failed = failed || w[i].failed;
		}
		cpu = cpu_seconds(e.pid) - cpu0;
		all = malloc((n_all ? n_all : 1) * sizeof(double));
		n_all = 0;
		for (int i = 0; i < nc; i++)
		{
			memcpy(all + n_all, w[i].lat, w[i].n_lat * sizeof(double));
			n_all += w[i].n_lat;
			free(w[i].lat);
		}
		qsort(all, n_all, sizeof(double), tsort_double_asc);
		printf("%-9s %7d %9.2f %12.3f %9.2f %11.3f %9.1f %9.1f %9.1f%s\n",
			   max_batch > 1 ? "on" : "off", nc, total / o->seconds,
			   total / o->seconds * o->n / 1e6, cpu / o->seconds,
			   cpu > 0 ? total * (double) o->n / cpu / 1e6 : 0.0,
			   n_all ? all[n_all / 2] : 0.0, n_all ? all[(size_t) (n_all * 0.99)] : 0.0,
			   n_all ? all[n_all - 1] : 0.0, failed ? "  (a client failed)" : "");
		fflush(stdout);
		free(all);
		free(w);
		free(th);
	}
	{
		char		cmd[256];

		/* what the engine said about its devices and uploads */
		snprintf(cmd, sizeof(cmd), "grep -E 'GPU|upload' '%s' | sed 's/^/# /'", e.log);
		if (system(cmd) < 0)
			printf("# no engine log\n");
	}
	tc_engine_cleanup(&e);
}

int
main(int argc, char **argv)
{
	opts		o = {.n = 250000, .distinct = 2000, .clients = {1, 4, 16}, .n_clients = 3,
	.seconds = 5.0, .threads = 0, .k = 10, .batch = 64, .gpu = "auto"};
	const targ_opt table[] = {
		OPT_INT("--templates", &o.n, "N"), OPT_INT("--distinct", &o.distinct, "M"),
		OPT_INTS("--clients", o.clients, &o.n_clients, "1,4,16"), OPT_DOUBLE("--seconds", &o.seconds, "S"),
		OPT_INT("--threads", &o.threads, "T"), OPT_U32("--k", &o.k, "K"), OPT_INT("--batch", &o.batch, "B"),
		OPT_STR("--gpu", &o.gpu, "auto|on|off"), OPT_END
	};

	targ_parse(argc, argv, table);
	if (o.threads <= 0)
		o.threads = (int) sysconf(_SC_NPROCESSORS_ONLN);
	if (o.distinct > o.n)
		o.distinct = o.n;
	if (o.n < 1 || o.distinct < 1 || o.seconds <= 0 || o.batch < 2)
	{
		fprintf(stderr, "bad options\n");
		return 2;
	}
	mcc_lss_init();
	gallery_t = tl_synth_templates(1, o.distinct, false);
	probe_t = tl_synth_templates(1, n_probes, true);
	{
		double		cyl = 0;

		for (int i = 0; i < o.distinct; i++)
		{
			mcc_template_view v;
			mcc_error	err;

			mcc_template_open(gallery_t[i].b, gallery_t[i].n, &v, &err);
			cyl += v.n_cyl;
		}
		printf("# %d templates (%d distinct, %.1f cylinders each), k %u, %.0f s per run, "
			   "engine %s\n", o.n, o.distinct, cyl / o.distinct, o.k, o.seconds, tc_engine_path());
	}
	printf("%-9s %7s %9s %12s %9s %11s %9s %9s %9s\n", "batching", "clients", "req/s",
		   "Mmatch/s", "cores", "Mmatch/cpu", "p50 ms", "p99 ms", "max ms");
	run_engine(&o, o.batch);
	run_engine(&o, 1);
	tl_templates_free(gallery_t, o.distinct);
	tl_templates_free(probe_t, n_probes);
	return 0;
}
