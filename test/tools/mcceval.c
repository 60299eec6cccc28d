/*
 * mcceval: accuracy of every matching method of mcc_match.h.
 *
 *   mcceval fvc   (--dir DIR | --synth) [options]
 *   mcceval ident (--dir DIR | --synth) [options]
 *
 * Data:
 *   --dir DIR          records named FINGER_IMPRESSION.EXT (FVC naming), any
 *                      format the extension imports: .xyt (NBIS), .json, or
 *                      an ISO/IEC 19794-2 / ANSI INCITS 378 record (any
 *                      other extension)
 *   --ext EXT          only files with this extension (default: all)
 *   --frame WxHxDPI    image frame for .xyt files (default: from the data)
 *   --unstretch WxH    records whose frame was resized (SecuGen of the
 *                      shared data: 300x400): map coordinates and directions
 *                      back to a W x H image
 *   --synth            synthetic fingers of mcc_synth.h (defaults, then
 *                      --set name=value for any mcc_synth_params field,
 *                      e.g. --set seed=7 --set distortion=1.5)
 *   --fingers N --impressions I    synthetic FVC data set (default 100 x 8)
 *   --gallery N --probes M         synthetic identification (default
 *                      20000 and 10000): gallery = impression 0 of fingers
 *                      0..N-1; mated probes = impression 1 of fingers
 *                      0..M/2-1; non-mated = impression 1 of fingers
 *                      N..N+M/2-1
 *   --profile NAME     template profile (default gpu2015)
 *
 * Protocols:
 *   fvc    every genuine pair (same finger, i < j) and every impostor pair
 *          (different fingers), and the FVC subset (impostors: impression 1
 *          of each finger against impression 1 of the others); EER, FMR100,
 *          FMR1000, FMRzero. The first template of a pair is the probe.
 *   ident  paper 000 Sec. 5.4: LSS of each probe against the whole gallery
 *          (mcc_soa_scan), the best mcc_refine_count() candidates rescored
 *          with each method, ranked by the new score (ties: smaller gallery
 *          index); FNIR at FPIR = 0 and 1 %, rank-1 rate, identification
 *          EER (FNIR = FPIR). Real data: gallery = the first impression of
 *          the first half of the fingers, mated probes = their other
 *          impressions, non-mated probes = every impression of the rest.
 *
 * Options:
 *   --methods a,b,...   (default: every method)
 *   --refine-fraction F --refine-min K   (default 0.001 and 100)
 *   --threads T          (default: the number of CPUs)
 *   --gpu                ident: the LSS stage on every visible GPU (the
 *                        binary built by kernels/gpu.mk, build/gpu/mcceval);
 *                        the refinement stays on the CPU threads
 *   --dtr-norm sum|mean  --cons-score count|sim|count-lss
 *   --cons-nsel N --cons-ts PX --cons-ttheta DEG   consolidation constants
 *   --relax-nr N         cap n_R of every relaxation
 *   --relax-params W,NREL,MU1,TAU1,MU2,TAU2,MU3,TAU3   the -r constants
 *   --dtr-params ...     the -dtr constants (angles in radians)
 *   --fused-np MIN,MAX,MU,TAU   n_P of fused's LGS-DTR
 *   --gpu-refine         ident: --gpu, and the shortlists rescored on the GPU
 *                        too (mcc_gpu_refine.h) for the methods it runs;
 *                        every --check-every N-th probe (default 100) is also
 *                        rescored on the CPU and the scores compared
 *   --recall-depth D     ident --gpu: search the D best by LSS (at least the
 *                        shortlist) to report the first stage's recall up to
 *                        D (the CPU scan ranks every entry anyway)
 *   --baseline FILE      also report a matcher's scores, lines
 *                        "score probe gallery" with FVC file names
 *                        (NBIS bozorth3 output)
 *   --baseline-name NAME  its name in tables and plots (default baseline)
 *   --det PREFIX         DET curves: PREFIX.dat and PREFIX.gp (gnuplot
 *                        script that writes PREFIX.png)
 *   --title TEXT         plot title
 *   --tsv FILE           append one line per method and protocol
 *   --label TEXT         first column of the tsv lines
 *   --scores FILE        every score (fvc: probe gallery method score; ident:
 *                        probe mate candidate, then each method's score, per
 *                        shortlisted candidate)

 *
 * Environment: MCC_MATCH_KERNEL (avx512, avx2, popcnt, generic) forces the
 * CPU kernel of the comparisons, as in bench_refine; every kernel gives the
 * same scores, so this is for checking that on whole data sets.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mcc_iso.h"
#include "mcc_json.h"
#include "mcc_lss.h"
#include "mcc_match.h"
#include "mcc_soa.h"
#include "mcc_synth.h"
#ifdef MCC_EVAL_GPU
#include "mcc_gpu.h"
#include "mcc_gpu_refine.h"
#endif
#include "mcc_template.h"
#include "mcc_topk.h"
#include "mcc_xyt.h"
#include "../unit/testclock.h"

#define MAX_METHODS (MCC_NMETHODS + 1)	/* + a baseline */

/* One template of the data set. */
typedef struct record
{
	int64_t		finger;
	int			imp;
	char		name[64];		/* file stem, "101_1" */
	uint8_t    *blob;
	size_t		size;
	mcc_template_view v;
} record;

typedef struct options
{
	const char *mode;
	const char *dir;
	const char *ext;
	int			frame_w;
	int			frame_h;
	int			frame_dpi;
	int			unstretch_w;
	int			unstretch_h;
	bool		synth;
	mcc_synth_params sp;
	int			fingers;
	int			impressions;
	int			gallery;
	int			probes;
	const mcc_profile *profile;
	int			methods[MCC_NMETHODS];
	int			n_methods;
	double		refine_fraction;
	int			refine_min;
	int			threads;
	bool		gpu;
	mcc_match_params mp;
	const char *baseline;
	const char *baseline_name;
	const char *det;
	const char *title;
	const char *tsv;
	const char *label;
	const char *scores;
	int			recall_depth;	/* --recall-depth: GPU search depth for the recall table */
	bool		gpu_refine;		/* --gpu-refine: rescore the shortlists on the GPU */
	int			check_every;	/* --check-every N: with --gpu-refine, probe i % N == 0 also on the CPU */
} options;

static options opt;

/* Print a message and exit with status 2. */
static void
die(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	fprintf(stderr, "mcceval: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

/* malloc or die. */
static void *
xmalloc(size_t n)
{
	void	   *p = malloc(n ? n : 1);

	if (p == NULL)
		die("out of memory (%zu bytes)", n);
	return p;
}

/* ------------------------------------------------------------------ */
/* data                                                                */

/* Build the template of a minutiae set into r. */
static void
record_build(record *r, const mcc_minutiae *ms)
{
	mcc_error	err;

	if (mcc_template_build(ms, opt.profile, NULL, &r->size, &err) != MCC_OK)
		die("%s: %s", r->name, err.message);
	r->blob = xmalloc(r->size);
	if (mcc_template_build(ms, opt.profile, r->blob, &r->size, &err) != MCC_OK ||
		mcc_template_open(r->blob, r->size, &r->v, &err) != MCC_OK)
		die("%s: %s", r->name, err.message);
}

/*
 * Map a record of a resized image back to the original W x H frame: scale
 * x and y separately and turn each direction with the same anisotropic map.
 */
static void
unstretch(mcc_minutiae *ms, int w, int h)
{
	double		sx = (double) w / ms->width;
	double		sy = (double) h / ms->height;

	for (int i = 0; i < ms->count; i++)
	{
		mcc_minutia *m = &ms->m[i];
		long		x = lround(m->x * sx);
		long		y = lround(m->y * sy);

		m->x = (int16_t) (x < w ? x : w - 1);
		m->y = (int16_t) (y < h ? y : h - 1);
		/* direction (cos t, -sin t) in image axes, scaled by (sx, sy) */
		m->theta = mcc_angle_normalize(atan2(sy * sin(m->theta), sx * cos(m->theta)));
	}
	ms->width = (uint16_t) w;
	ms->height = (uint16_t) h;
}

/* Read one record file into minutiae. */
static void
read_minutiae(const char *path, const char *ext, mcc_minutiae *ms)
{
	size_t		len;
	uint8_t    *buf;
	FILE	   *f = fopen(path, "rb");
	long		n;
	mcc_error	err;
	mcc_status	st;

	if (f == NULL)
		die("cannot open %s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = xmalloc((size_t) n + 1);
	len = fread(buf, 1, (size_t) n, f);
	fclose(f);
	buf[len] = 0;
	if (strcmp(ext, "xyt") == 0)
		st = mcc_xyt_read((const char *) buf, len, opt.frame_w, opt.frame_h,
						  opt.frame_dpi, ms, &err);
	else if (strcmp(ext, "json") == 0)
	{
		const mcc_profile *p;

		st = mcc_json_read((const char *) buf, len, ms, &p, &err);
	}
	else
		st = mcc_iso_read(buf, len, 1, ms, NULL, &err);
	free(buf);
	if (st != MCC_OK)
		die("%s: %s", path, err.message);
	if (opt.unstretch_w > 0)
		unstretch(ms, opt.unstretch_w, opt.unstretch_h);
}

/* Order records by finger, then impression. */
static int
cmp_record(const void *pa, const void *pb)
{
	const record *a = pa;
	const record *b = pb;

	if (a->finger != b->finger)
		return a->finger < b->finger ? -1 : 1;
	return (a->imp > b->imp) - (a->imp < b->imp);
}

/* Every FINGER_IMPRESSION.EXT record of a directory. */
static record *
load_dir(const char *dir, int *n_out)
{
	DIR		   *d = opendir(dir);
	struct dirent *e;
	record	   *r = NULL;
	int			n = 0;
	int			cap = 0;
	mcc_minutiae *ms = xmalloc(sizeof(mcc_minutiae));

	if (d == NULL)
		die("cannot open directory %s: %s", dir, strerror(errno));
	while ((e = readdir(d)) != NULL)
	{
		long		finger;
		int			imp;
		int			used = 0;
		const char *dot = strrchr(e->d_name, '.');
		char		path[4096];

		if (dot == NULL || sscanf(e->d_name, "%ld_%d%n", &finger, &imp, &used) != 2 ||
			e->d_name + used != dot)
			continue;
		if (opt.ext && strcmp(dot + 1, opt.ext) != 0)
			continue;
		if (n == cap)
		{
			cap = cap ? 2 * cap : 128;
			r = realloc(r, sizeof(record) * cap);
			if (r == NULL)
				die("out of memory");
		}
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		read_minutiae(path, dot + 1, ms);
		memset(&r[n], 0, sizeof(record));
		r[n].finger = finger;
		r[n].imp = imp;
		snprintf(r[n].name, sizeof(r[n].name), "%.*s", (int) (dot - e->d_name), e->d_name);
		record_build(&r[n], ms);
		n++;
	}
	closedir(d);
	free(ms);
	if (n == 0)
		die("no FINGER_IMPRESSION records in %s", dir);
	qsort(r, n, sizeof(record), cmp_record);
	*n_out = n;
	return r;
}

/* Work list of synthetic templates to generate. */
typedef struct synth_job
{
	record	   *r;
	int			n;
	int			next;
	pthread_mutex_t lock;
} synth_job;

/* Thread body: build synthetic templates until none is left. */
static void *
synth_worker(void *arg)
{
	synth_job  *job = arg;
	mcc_minutiae *master = xmalloc(sizeof(mcc_minutiae));
	mcc_minutiae *imp = xmalloc(sizeof(mcc_minutiae));

	for (;;)
	{
		int			i;

		pthread_mutex_lock(&job->lock);
		i = job->next++;
		pthread_mutex_unlock(&job->lock);
		if (i >= job->n)
			break;
		mcc_synth_master(&opt.sp, (uint64_t) job->r[i].finger, master);
		mcc_synth_impression(&opt.sp, master, (uint64_t) job->r[i].finger,
							 (uint64_t) job->r[i].imp, imp);
		record_build(&job->r[i], imp);
	}
	free(master);
	free(imp);
	return NULL;
}

/* Build the templates of r[0..n) (finger and imp set) with threads. */
static void
synth_build(record *r, int n)
{
	synth_job	job = {.r = r, .n = n, .next = 0};
	pthread_t	th[64];

	pthread_mutex_init(&job.lock, NULL);
	for (int i = 0; i < n; i++)
		snprintf(r[i].name, sizeof(r[i].name), "%ld_%d", (long) r[i].finger, r[i].imp);
	for (int t = 0; t < opt.threads; t++)
		pthread_create(&th[t], NULL, synth_worker, &job);
	for (int t = 0; t < opt.threads; t++)
		pthread_join(th[t], NULL);
	pthread_mutex_destroy(&job.lock);
}

/* ------------------------------------------------------------------ */
/* metrics                                                             */

/* A score with its class (1 genuine / mated, 0 impostor / non-mated). */
typedef struct labelled
{
	double		s;
	int			gen;
} labelled;

/* Descending score. */
static int
cmp_labelled(const void *pa, const void *pb)
{
	double		a = ((const labelled *) pa)->s;
	double		b = ((const labelled *) pb)->s;

	return (a < b) - (a > b);
}

typedef struct metrics
{
	int			n_gen;
	int			n_imp;
	double		eer;
	double		fmr100;
	double		fmr1000;
	double		fmrzero;
	/* the error curve at every distinct threshold, FMR increasing */
	int			n_pts;
	double	   *fmr;
	double	   *fnmr;
} metrics;

/*
 * Error rates of a list of scores (accept when score >= t): FMR(t) and
 * FNMR(t) at every distinct score and above the largest. EER: the mean of
 * FMR and FNMR at the threshold where they are closest (ties: the smaller
 * mean); this is the rule behind the bozorth3 EERs of shared/data/README.md
 * (it reproduces all eight of the mindtct ones). FMR100, FMR1000 and
 * FMRzero: the lowest FNMR with FMR <= 1 %, 0.1 %, 0 (FVC 2000, Maio et
 * al., IEEE TPAMI 24(3), 2002). A score of -infinity is never accepted (a
 * mated search whose first candidate is not the mate).
 */
static void
compute_metrics(labelled *l, int n, metrics *m)
{
	int			ng = 0;
	int			ni = 0;
	int			acc_g = 0;		/* genuine accepted at the current threshold */
	int			acc_i = 0;
	int			k = 0;
	double		best_gap = INFINITY;

	memset(m, 0, sizeof(*m));
	for (int i = 0; i < n; i++)
	{
		if (l[i].gen)
			ng++;
		else
			ni++;
	}
	m->n_gen = ng;
	m->n_imp = ni;
	if (ng == 0 || ni == 0)
		return;
	qsort(l, n, sizeof(labelled), cmp_labelled);
	m->fmr = xmalloc(sizeof(double) * (n + 1));
	m->fnmr = xmalloc(sizeof(double) * (n + 1));
	m->fmr100 = m->fmr1000 = m->fmrzero = 1.0;
	/* thresholds from above the largest score down to the smallest */
	for (int i = 0; i <= n; i++)
	{
		double		fmr;
		double		fnmr;
		double		gap;

		if (i > 0)
		{
			/* lower the threshold to l[i-1].s: accept every score equal to it */
			double		t = l[i - 1].s;

			if (t == -INFINITY)
				break;			/* a search that failed at every threshold */

			while (k < n && l[k].s >= t)
			{
				if (l[k].gen)
					acc_g++;
				else
					acc_i++;
				k++;
			}
			if (k != i)
				continue;		/* same threshold as a later i */
		}
		fmr = (double) acc_i / ni;
		fnmr = (double) (ng - acc_g) / ng;
		m->fmr[m->n_pts] = fmr;
		m->fnmr[m->n_pts] = fnmr;
		m->n_pts++;
		if (fmr <= 0.01 && fnmr < m->fmr100)
			m->fmr100 = fnmr;
		if (fmr <= 0.001 && fnmr < m->fmr1000)
			m->fmr1000 = fnmr;
		if (fmr == 0.0 && fnmr < m->fmrzero)
			m->fmrzero = fnmr;
		gap = fabs(fmr - fnmr);
		if (gap < best_gap || (gap == best_gap && (fmr + fnmr) / 2.0 < m->eer))
		{
			best_gap = gap;
			m->eer = (fmr + fnmr) / 2.0;
		}
	}
}

/* ------------------------------------------------------------------ */
/* output                                                              */

static FILE *tsv_file;

/* Name of column c of the result table. */
static const char *
method_label(int m)
{
	return m < MCC_NMETHODS ? mcc_method_name(m) : opt.baseline_name;
}

/*
 * Line style of a curve: the colour says the stage (grey plain, blue the
 * TPAMI relaxation, red DTR, green consolidation, purple and thick the
 * default, fused; black a baseline), the dashes the pairing (solid LSS,
 * dashed LSA, dotted LGS).
 */
static const char *
curve_style(const char *name)
{
	static char buf[96];
	const char *colour = "#000000";
	int			dash = 1;
	double		width = 2.0;

	if (strncmp(name, "lsa", 3) == 0)
		dash = 2;
	else if (strncmp(name, "lgs", 3) == 0)
		dash = 3;
	if (strstr(name, "-dtr"))
		colour = "#d62728";
	else if (strstr(name, "-r"))
		colour = "#1f77b4";
	else if (strcmp(name, "consolidation") == 0)
		colour = "#2ca02c";
	else if (strcmp(name, "fused") == 0)
	{
		colour = "#9467bd";
		width = 3.0;
	}
	else if (strncmp(name, "ls", 2) == 0 || strncmp(name, "lg", 2) == 0)
		colour = "#8c8c8c";
	else
		width = 2.5;			/* a baseline */
	snprintf(buf, sizeof(buf), "lw %.1f dt %d lc rgb '%s'", width, dash, colour);
	return buf;
}

/* Write DET data blocks and a gnuplot script for curves[0..n). */
static void
write_det(const char *prefix, const char *title, const char *xlabel,
		  const char *ylabel, metrics *curves, const char *const *names, int n)
{
	char		path[4096];
	FILE	   *f;
	const char *base = strrchr(prefix, '/');

	base = base ? base + 1 : prefix;
	snprintf(path, sizeof(path), "%s.dat", prefix);
	if ((f = fopen(path, "w")) == NULL)
		die("cannot write %s", path);
	for (int c = 0; c < n; c++)
	{
		fprintf(f, "# %s\n", names[c]);
		for (int i = 0; i < curves[c].n_pts; i++)
			fprintf(f, "%.9g %.9g\n", curves[c].fmr[i], curves[c].fnmr[i]);
		fprintf(f, "\n\n");
	}
	fclose(f);
	snprintf(path, sizeof(path), "%s.gp", prefix);
	if ((f = fopen(path, "w")) == NULL)
		die("cannot write %s", path);
	fprintf(f, "# DET curves written by mcceval; run: gnuplot %s.gp\n", base);
	fprintf(f, "set terminal pngcairo size 820,560 font \",11\"\n");
	fprintf(f, "set output '%s.png'\n", base);
	fprintf(f, "set title \"%s\" noenhanced\n", title ? title : base);
	fprintf(f, "set logscale xy\nset xrange [1e-4:1]\nset yrange [1e-3:1]\n");
	fprintf(f, "set xlabel '%s'\nset ylabel '%s'\nset grid\n", xlabel, ylabel);
	fprintf(f, "set key outside right top noenhanced\n");
	fprintf(f, "f(x) = x < 1e-4 ? 1e-4 : x\ng(y) = y < 1e-3 ? 1e-3 : y\n");
	fprintf(f, "plot \\\n");
	for (int c = 0; c < n; c++)
		fprintf(f, "  '%s.dat' index %d using (f($1)):(g($2)) with steps %s title '%s'%s\n",
				base, c, curve_style(names[c]), names[c], c + 1 < n ? ", \\" : "");
	fclose(f);
}

/* ------------------------------------------------------------------ */
/* fvc protocol                                                        */

typedef struct pair_job
{
	record	   *r;
	int			n_pairs;
	int		   *pa;
	int		   *pb;
	float	   *score;			/* n_pairs x MCC_NMETHODS */
	int			next;
	pthread_mutex_t lock;
	double		t_matrix;
	double		t_method[MCC_NMETHODS];
} pair_job;

/* Thread body: score pairs with every method until none is left. */
static void *
pair_worker(void *arg)
{
	pair_job   *job = arg;
	mcc_match_work *w = xmalloc(mcc_match_work_size());
	double		t_matrix = 0;
	double		t_method[MCC_NMETHODS] = {0};

	mcc_match_work_init(w);
	for (;;)
	{
		int			i;
		mcc_error	err;
		float		s;
		double		t0;

		pthread_mutex_lock(&job->lock);
		i = job->next;
		job->next += 16;
		pthread_mutex_unlock(&job->lock);
		if (i >= job->n_pairs)
			break;
		for (int j = i; j < i + 16 && j < job->n_pairs; j++)
		{
			t0 = tclock_wall_s();
			if (mcc_match_pair(w, &job->r[job->pa[j]].v, &job->r[job->pb[j]].v,
							   MCC_LSS, &opt.mp, &s, &err) != MCC_OK)
				die("%s", err.message);
			t_matrix += tclock_wall_s() - t0;
			for (int k = 0; k < opt.n_methods; k++)
			{
				int			m = opt.methods[k];

				t0 = tclock_wall_s();
				job->score[(size_t) j * MCC_NMETHODS + m] = mcc_match_rescore(w, m, &opt.mp);
				t_method[m] += tclock_wall_s() - t0;
			}
		}
	}
	pthread_mutex_lock(&job->lock);
	job->t_matrix += t_matrix;
	for (int m = 0; m < MCC_NMETHODS; m++)
		job->t_method[m] += t_method[m];
	pthread_mutex_unlock(&job->lock);
	free(w);
	return NULL;
}

/* Up to max comma-separated numbers of an option; returns how many. */
static int
parse_numbers(const char *v, double *x, int max, const char *what)
{
	int			n = 0;
	char	   *end;

	while (n < max)
	{
		x[n++] = strtod(v, &end);
		if (end == v)
			die("bad %s \"%s\"", what, v);
		if (*end != ',')
			break;
		v = end + 1;
	}
	return n;
}

/*
 * --relax-params / --dtr-params "wr,nrel,mu1,tau1,mu2,tau2,mu3,tau3": the
 * constants of a relaxation (angles in radians).
 */
static void
parse_relax(mcc_relax_params *rp, const char *v)
{
	double		x[8];

	if (parse_numbers(v, x, 8, "relaxation constants") != 8)
		die("relaxation constants: 8 numbers");
	rp->w_r = x[0];
	rp->n_rel = (int) x[1];
	for (int i = 0; i < 3; i++)
	{
		rp->mu[i] = x[2 + 2 * i];
		rp->tau[i] = x[3 + 2 * i];
	}
}

/* --fused-np "min,max,mu,tau": n_P of fused's LGS-DTR. */
static void
parse_fused_np(mcc_match_params *mp, const char *v)
{
	double		x[4];

	if (parse_numbers(v, x, 4, "n_P constants") != 4)
		die("--fused-np: 4 numbers");
	mp->fused_dtr_np = (mcc_np_params) {(int) x[0], (int) x[1], x[2], x[3]};
}

/* Baseline scores by "probe gallery" names; NaN where absent. */
static double *
read_baseline(const char *path, record *r, int n, const int *pa, const int *pb, int n_pairs)
{
	FILE	   *f = fopen(path, "r");
	double	   *b = xmalloc(sizeof(double) * n_pairs);
	char		line[8192];
	int			found = 0;

	if (f == NULL)
		die("cannot open %s", path);
	for (int i = 0; i < n_pairs; i++)
		b[i] = NAN;
	while (fgets(line, sizeof(line), f))
	{
		double		s;
		char		p1[4096];
		char		p2[4096];
		char		s1[64];
		char		s2[64];
		int			i1 = -1;
		int			i2 = -1;

		if (sscanf(line, "%lf %4095s %4095s", &s, p1, p2) != 3)
			continue;
		/* the file stems, "101_1" */
		for (int k = 0; k < 2; k++)
		{
			char	   *p = k ? p2 : p1;
			char	   *slash = strrchr(p, '/');
			char	   *stem = slash ? slash + 1 : p;
			char	   *dot = strrchr(stem, '.');

			snprintf(k ? s2 : s1, 64, "%.*s", dot ? (int) (dot - stem) : (int) strlen(stem), stem);
		}
		for (int i = 0; i < n; i++)
		{
			if (strcmp(r[i].name, s1) == 0)
				i1 = i;
			if (strcmp(r[i].name, s2) == 0)
				i2 = i;
		}
		if (i1 < 0 || i2 < 0)
			continue;
		for (int i = 0; i < n_pairs; i++)
			if ((pa[i] == i1 && pb[i] == i2) || (pa[i] == i2 && pb[i] == i1))
			{
				b[i] = s;
				found++;
				break;
			}
	}
	fclose(f);
	fprintf(stderr, "baseline: %d of %d pairs found in %s\n", found, n_pairs, path);
	return b;
}

/* Print one row of a verification table (and the tsv line). */
static void
print_verif(const char *protocol, const char *name, const metrics *m)
{
	printf("  %-14s %6d %7d  %7.2f%% %7.2f%% %7.2f%% %7.2f%%\n", name, m->n_gen, m->n_imp,
		   100 * m->eer, 100 * m->fmr100, 100 * m->fmr1000, 100 * m->fmrzero);
	if (tsv_file)
		fprintf(tsv_file, "%s\t%s\t%s\t%d\t%d\t%.6f\t%.6f\t%.6f\t%.6f\n",
				opt.label ? opt.label : "-", protocol, name, m->n_gen, m->n_imp,
				m->eer, m->fmr100, m->fmr1000, m->fmrzero);
}

/* The FVC protocols on records r[0..n). */
static void
run_fvc(record *r, int n)
{
	int			n_pairs = n * (n - 1) / 2;
	int		   *pa = xmalloc(sizeof(int) * n_pairs);
	int		   *pb = xmalloc(sizeof(int) * n_pairs);
	pair_job	job = {0};
	double	   *base = NULL;
	int			k = 0;
	int			first_imp = r[0].imp;
	pthread_t	th[64];
	double		t0 = tclock_wall_s();
	labelled   *l = xmalloc(sizeof(labelled) * n_pairs);
	metrics		curves[2][MAX_METHODS];
	const char *names[MAX_METHODS];
	int			cols[MAX_METHODS];
	int			n_cols = 0;

	for (int i = 0; i < n; i++)
		if (r[i].imp < first_imp)
			first_imp = r[i].imp;
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
		{
			pa[k] = i;
			pb[k] = j;
			k++;
		}
	job.r = r;
	job.n_pairs = n_pairs;
	job.pa = pa;
	job.pb = pb;
	job.score = xmalloc(sizeof(float) * (size_t) n_pairs * MCC_NMETHODS);
	pthread_mutex_init(&job.lock, NULL);
	for (int t = 0; t < opt.threads; t++)
		pthread_create(&th[t], NULL, pair_worker, &job);
	for (int t = 0; t < opt.threads; t++)
		pthread_join(th[t], NULL);
	fprintf(stderr, "fvc: %d templates, %d pairs, %.1f s (%s kernel); per pair: matrix %.1f us",
			n, n_pairs, tclock_wall_s() - t0, mcc_match_kernel_name(), 1e6 * job.t_matrix / n_pairs);
	for (int c = 0; c < opt.n_methods; c++)
		fprintf(stderr, ", %s %.1f us", mcc_method_name(opt.methods[c]),
				1e6 * job.t_method[opt.methods[c]] / n_pairs);
	fprintf(stderr, "\n");
	if (opt.baseline)
		base = read_baseline(opt.baseline, r, n, pa, pb, n_pairs);

	if (opt.scores)
	{
		FILE	   *f = fopen(opt.scores, "w");

		if (f == NULL)
			die("cannot write %s", opt.scores);
		for (int i = 0; i < n_pairs; i++)
			for (int c = 0; c < opt.n_methods; c++)
				fprintf(f, "%s %s %s %.9g\n", r[pa[i]].name, r[pb[i]].name,
						mcc_method_name(opt.methods[c]),
						job.score[(size_t) i * MCC_NMETHODS + opt.methods[c]]);
		fclose(f);
	}

	for (int c = 0; c < opt.n_methods; c++)
		cols[n_cols++] = opt.methods[c];
	if (base)
		cols[n_cols++] = MCC_NMETHODS;
	for (int proto = 0; proto < 2; proto++)
	{
		printf("%s protocol (%s)\n", proto == 0 ? "all pairs" : "FVC",
			   proto == 0 ? "every genuine and impostor pair" :
			   "every genuine pair; impostors: first impressions only");
		printf("  %-14s %6s %7s  %8s %8s %8s %8s\n", "method", "gen", "imp", "EER",
			   "FMR100", "FMR1000", "FMRzero");
		for (int c = 0; c < n_cols; c++)
		{
			int			m = cols[c];
			int			nl = 0;

			for (int i = 0; i < n_pairs; i++)
			{
				bool		gen = r[pa[i]].finger == r[pb[i]].finger;
				double		s = m < MCC_NMETHODS ?
					job.score[(size_t) i * MCC_NMETHODS + m] : base[i];

				if (isnan(s))
					continue;
				if (proto == 1 && !gen &&
					(r[pa[i]].imp != first_imp || r[pb[i]].imp != first_imp))
					continue;
				l[nl].s = s;
				l[nl].gen = gen;
				nl++;
			}
			compute_metrics(l, nl, &curves[proto][c]);
			names[c] = method_label(m);
			print_verif(proto == 0 ? "all" : "fvc", names[c], &curves[proto][c]);
		}
	}
	if (opt.det)
		write_det(opt.det, opt.title, "FMR", "FNMR", curves[0], names, n_cols);
	free(l);
	free(pa);
	free(pb);
	free(job.score);
	free(base);
}

/* ------------------------------------------------------------------ */
/* identification                                                      */

typedef struct ident_job
{
	record	   *gal;
	int			n_gal;
	record	   *prb;
	int			n_prb;
	const int64_t *mate;		/* gallery index of each probe's mate, -1 */
	mcc_soa		soa;
	int			n_refine;
	/* per probe and method: the first-ranked gallery index and its score */
	int		   *top;
	float	   *top_score;
	int			next;
	int			lss_mismatch;
	int			mate_missed;	/* mated probes whose mate LSS did not shortlist */
	int		   *mate_rank;		/* per mated probe: 1 + entries ranked above its mate by LSS (CPU scan) */
	FILE	   *scores;			/* --scores: every shortlisted candidate's scores */
	long		gpu_checked;	/* --gpu-refine: refined scores compared with the CPU's */
	long		gpu_differ;		/* of which differed */
	pthread_mutex_t lock;
	double		t_scan;
	double		t_matrix;
	double		t_method[MCC_NMETHODS];
	long		n_refined;
#ifdef MCC_EVAL_GPU
	struct mcc_gpu *gpu;		/* the LSS stage on the GPU(s), or NULL */
	mcc_gpu_geom geo;			/* --gpu-refine: the gallery's minutiae */
	double		t_gpu_refine;	/* seconds in mcc_gpu_refine */
	pthread_mutex_t gpu_lock;	/* one search at a time */
#endif
} ident_job;

/* The shortlist of probe i: LSS over the gallery, the best n_refine. */
static void
ident_shortlist(ident_job *job, int i, mcc_probe *q, float *scores, mcc_hit *hits,
				mcc_topk *tk)
{
#ifdef MCC_EVAL_GPU
	if (job->gpu)
	{
		int			depth = opt.recall_depth > job->n_refine ? opt.recall_depth : job->n_refine;
		mcc_gpu_hit *gh = xmalloc(sizeof(mcc_gpu_hit) * depth);
		int			nh = 0;
		mcc_error	err;

		pthread_mutex_lock(&job->gpu_lock);
		if (mcc_gpu_search(job->gpu, &job->prb[i].v, 1, depth, gh, &nh, &err) != MCC_GPU_OK)
			die("GPU search: %s", err.message);
		pthread_mutex_unlock(&job->gpu_lock);
		/* the mate's rank within the depth searched (beyond it: depth + 1) */
		if (job->mate[i] >= 0)
		{
			job->mate_rank[i] = depth + 1;
			for (int c = 0; c < nh; c++)
				if ((int64_t) gh[c].index == job->mate[i])
				{
					job->mate_rank[i] = c + 1;
					break;
				}
		}
		mcc_topk_init(tk, job->n_refine, hits, job->n_refine);
		for (int c = 0; c < nh && c < job->n_refine; c++)
		{
			hits[c].score = gh[c].score;
			hits[c].id = (int64_t) gh[c].index;
		}
		tk->n = nh < job->n_refine ? nh : job->n_refine;	/* already in identify's order */
		free(gh);
		return;
	}
#endif
	mcc_probe_init(q, &job->prb[i].v);
	mcc_soa_scan(q, &job->soa, 0, job->n_gal, scores);
	mcc_topk_init(tk, job->n_refine, hits, job->n_refine);
	for (int g = 0; g < job->n_gal; g++)
		mcc_topk_push(tk, scores[g], g);
	mcc_topk_sort(tk);
}

/* 1 + the entries that identify's order (score desc, index asc) puts above the mate. */
static int
mate_rank_of(const float *scores, int n, int mate)
{
	int			r = 1;

	for (int g = 0; g < n; g++)
		r += mcc_hit_better(scores[g], g, scores[mate], mate);
	return r;
}

/*
 * --gpu-refine: the shortlist of probe i rescored on the GPU with every
 * method it runs, into out[k * n + c] (method k, candidate c). Returns true
 * when the CPU must score this probe: without --gpu-refine, for a method
 * the GPU does not run, or for every check_every-th probe, whose GPU scores
 * (*scored) are then compared with the CPU's. out[k * n] is not a flag:
 * a method the GPU skips (lss) leaves its part unwritten.
 */
static bool
ident_gpu_rescore(ident_job *job, int i, const mcc_hit *hits, int n, float *out, bool *scored)
{
	*scored = false;
#ifdef MCC_EVAL_GPU
	if (job->gpu == NULL || !opt.gpu_refine || n == 0)
		return true;
	for (int k = 0; k < opt.n_methods; k++)
		if (opt.methods[k] != MCC_LSS && !mcc_gpu_refine_supported(opt.methods[k]))
			return true;
	{
		mcc_gpu_pair *pairs = xmalloc(sizeof(mcc_gpu_pair) * n);
		mcc_error	err;
		double		t0 = tclock_wall_s();

		for (int c = 0; c < n; c++)
			pairs[c] = (mcc_gpu_pair) {0, (uint32_t) hits[c].id, MCC_GPU_FROM_GALLERY};
		pthread_mutex_lock(&job->gpu_lock);
		for (int k = 0; k < opt.n_methods; k++)
			if (opt.methods[k] != MCC_LSS &&
				mcc_gpu_refine(job->gpu, &job->prb[i].v, 1, NULL, 0, pairs, (size_t) n,
							   opt.methods[k], &opt.mp, out + (size_t) k * n, &err) != MCC_GPU_OK)
				die("--gpu-refine: %s", err.message);
		job->t_gpu_refine += tclock_wall_s() - t0;
		pthread_mutex_unlock(&job->gpu_lock);
		free(pairs);
		*scored = true;
	}
	return opt.check_every > 0 && i % opt.check_every == 0;
#else
	(void) job;
	(void) i;
	(void) hits;
	(void) n;
	return true;
#endif
}

/* --scores in ident: "probe mate candidate score-of-each-method" per shortlisted candidate. */
static void
ident_write_scores(ident_job *job, int i, int g, const float *s)
{
	pthread_mutex_lock(&job->lock);
	fprintf(job->scores, "%d %lld %d", i, (long long) job->mate[i], g);
	for (int k = 0; k < opt.n_methods; k++)
		fprintf(job->scores, " %.9g", s[k]);
	fputc('\n', job->scores);
	pthread_mutex_unlock(&job->lock);
}

/* Thread body: search probes until none is left. */
static void *
ident_worker(void *arg)
{
	ident_job  *job = arg;
	mcc_probe  *q = aligned_alloc(64, (mcc_probe_size() + 63) & ~(size_t) 63);
	mcc_match_work *w = xmalloc(mcc_match_work_size());
	float	   *scores = xmalloc(sizeof(float) * job->n_gal);
	mcc_hit    *hits = xmalloc(sizeof(mcc_hit) * job->n_refine);
	float	   *gpu_s = xmalloc(sizeof(float) * (size_t) job->n_refine * MCC_NMETHODS + 4);
	double		t_scan = 0;
	double		t_matrix = 0;
	double		t_method[MCC_NMETHODS] = {0};
	float		cand_s[MCC_NMETHODS];
	long		n_refined = 0;
	int			mismatch = 0;
	int			missed = 0;

	if (q == NULL)
		die("out of memory");
	mcc_match_work_init(w);
	for (;;)
	{
		int			i;
		mcc_topk	tk;
		double		t0;
		mcc_error	err;

		pthread_mutex_lock(&job->lock);
		i = job->next++;
		pthread_mutex_unlock(&job->lock);
		if (i >= job->n_prb)
			break;
		t0 = tclock_wall_s();
		ident_shortlist(job, i, q, scores, hits, &tk);
		t_scan += tclock_wall_s() - t0;
#ifdef MCC_EVAL_GPU
		if (job->mate[i] >= 0 && job->gpu == NULL)
#else
		if (job->mate[i] >= 0)
#endif
			job->mate_rank[i] = mate_rank_of(scores, job->n_gal, (int) job->mate[i]);	/* GPU: set by the search */
		if (job->mate[i] >= 0)
		{
			bool		in = false;

			for (int c = 0; c < tk.n; c++)
				in |= hits[c].id == job->mate[i];
			missed += !in;
		}

		mcc_match_set_probe(w, &job->prb[i].v);
		for (int k = 0; k < opt.n_methods; k++)
		{
			job->top[(size_t) i * MCC_NMETHODS + opt.methods[k]] = -1;
			job->top_score[(size_t) i * MCC_NMETHODS + opt.methods[k]] = -1.0f;
		}
		bool		gpu_scored;
		bool		on_cpu = ident_gpu_rescore(job, i, hits, tk.n, gpu_s, &gpu_scored);

		for (int c = 0; c < tk.n; c++)
		{
			int			g = (int) hits[c].id;
			float		s;

			if (on_cpu)
			{
				t0 = tclock_wall_s();
				if (mcc_match_candidate(w, &job->gal[g].v, MCC_LSS, &opt.mp, &s, &err) != MCC_OK)
					die("%s", err.message);
				t_matrix += tclock_wall_s() - t0;
				mismatch += s != hits[c].score;
			}
			n_refined++;
			for (int k = 0; k < opt.n_methods; k++)
			{
				int			m = opt.methods[k];
				size_t		at = (size_t) i * MCC_NMETHODS + m;

				t0 = tclock_wall_s();
				if (m == MCC_LSS)
					s = hits[c].score;
				else if (!on_cpu)
					s = gpu_s[(size_t) k * tk.n + c];
				else
				{
					s = mcc_match_rescore(w, m, &opt.mp);
					if (gpu_scored && s != gpu_s[(size_t) k * tk.n + c])
						__atomic_add_fetch(&job->gpu_differ, 1, __ATOMIC_RELAXED);
					if (gpu_scored)
						__atomic_add_fetch(&job->gpu_checked, 1, __ATOMIC_RELAXED);
				}
				t_method[m] += tclock_wall_s() - t0;
				cand_s[k] = s;
				if (job->top[at] < 0 ||
					mcc_hit_better(s, g, job->top_score[at], job->top[at]))
				{
					job->top[at] = g;
					job->top_score[at] = s;
				}
			}
			if (job->scores)
				ident_write_scores(job, i, g, cand_s);
		}
		if (i % 1000 == 0)
			fprintf(stderr, "ident: probe %d of %d\n", i, job->n_prb);
	}
	pthread_mutex_lock(&job->lock);
	job->t_scan += t_scan;
	job->t_matrix += t_matrix;
	for (int m = 0; m < MCC_NMETHODS; m++)
		job->t_method[m] += t_method[m];
	job->n_refined += n_refined;
	job->lss_mismatch += mismatch;
	job->mate_missed += missed;
	pthread_mutex_unlock(&job->lock);
	free(q);
	free(w);
	free(scores);
	free(hits);
	free(gpu_s);
	return NULL;
}

/* Identification metrics of one method. */
typedef struct ident_metrics
{
	int			n_mated;
	int			n_nonmated;
	double		fnir0;			/* FNIR at FPIR = 0 */
	double		fnir1;			/* FNIR at FPIR = 1 % */
	double		rank1;
	metrics		det;			/* FPIR vs FNIR; its EER */
} ident_metrics;

/* Descending doubles. */
static int
cmp_desc(const void *pa, const void *pb)
{
	double		a = *(const double *) pa;
	double		b = *(const double *) pb;

	return (a < b) - (a > b);
}

/*
 * A mated search succeeds at threshold t if its first candidate is the mate
 * with score >= t; a non-mated search is a false positive if its first
 * candidate scores >= t. FNIR at FPIR = x: the smallest threshold whose
 * FPIR is at most x (strictly above the (floor(x n) + 1)-th best non-mated
 * score).
 */
static void
ident_metrics_of(const ident_job *job, int m, ident_metrics *im)
{
	double	   *nm = xmalloc(sizeof(double) * job->n_prb);
	labelled   *l = xmalloc(sizeof(labelled) * job->n_prb);
	int			n_nm = 0;
	int			n_m = 0;
	int			hit1 = 0;
	int			nl = 0;

	memset(im, 0, sizeof(*im));
	for (int i = 0; i < job->n_prb; i++)
	{
		size_t		at = (size_t) i * MCC_NMETHODS + m;

		if (job->mate[i] < 0)
		{
			nm[n_nm++] = job->top_score[at];
			l[nl].s = job->top_score[at];
			l[nl++].gen = 0;
		}
		else
		{
			bool		ok = job->top[at] == job->mate[i];

			n_m++;
			hit1 += ok;
			l[nl].s = ok ? job->top_score[at] : -INFINITY;
			l[nl++].gen = 1;
		}
	}
	qsort(nm, n_nm, sizeof(double), cmp_desc);
	for (int x = 0; x < 2; x++)
	{
		int			allowed = x == 0 ? 0 : (int) floor(0.01 * n_nm);
		double		t = allowed < n_nm ? nm[allowed] : -INFINITY;	/* accept > t */
		int			fn = 0;

		for (int i = 0; i < job->n_prb; i++)
		{
			size_t		at = (size_t) i * MCC_NMETHODS + m;

			if (job->mate[i] >= 0 &&
				!(job->top[at] == job->mate[i] && job->top_score[at] > t))
				fn++;
		}
		if (x == 0)
			im->fnir0 = n_m ? (double) fn / n_m : 0;
		else
			im->fnir1 = n_m ? (double) fn / n_m : 0;
	}
	im->n_mated = n_m;
	im->n_nonmated = n_nm;
	im->rank1 = n_m ? (double) hit1 / n_m : 0;
	compute_metrics(l, nl, &im->det);
	free(nm);
	free(l);
}

/* Put the gallery on every visible GPU (--gpu), or die saying why not. */
static void
ident_open_gpu(ident_job *job)
{
#ifdef MCC_EVAL_GPU
	int			count = 0;
	int			dev[MCC_GPU_MAX_DEVICES];
	mcc_gpu_devinfo info[MCC_GPU_MAX_DEVICES];
	mcc_gpu_options o = {0};
	mcc_error	err;
	double		t0 = tclock_wall_s();

	if (mcc_gpu_probe(&count, info, MCC_GPU_MAX_DEVICES, &err) != MCC_GPU_OK)
		die("--gpu: %s", err.message);
	for (int d = 0; d < count; d++)
		dev[d] = info[d].ordinal;
	if (mcc_gpu_open(dev, count, opt.profile, &o, &job->gpu, &err) != MCC_GPU_OK ||
		mcc_gpu_upload(job->gpu, &job->soa, &err) != MCC_GPU_OK)
		die("--gpu: %s", err.message);
	if (opt.gpu_refine)
	{
		if (mcc_gpu_geom_init(&job->geo, (uint32_t) job->n_gal, job->soa.n_cyl, &err) != MCC_OK)
			die("--gpu-refine: %s", err.message);
		for (int i = 0; i < job->n_gal; i++)
			if (mcc_gpu_geom_append(&job->geo, &job->gal[i].v, &err) != MCC_OK)
				die("--gpu-refine: %s", err.message);
		if (mcc_gpu_refine_attach(job->gpu, &job->soa, &job->geo, 0, (uint32_t) job->n_gal,
								  &err) != MCC_GPU_OK)
			die("--gpu-refine: %s", err.message);
	}
	pthread_mutex_init(&job->gpu_lock, NULL);
	fprintf(stderr, "ident: LSS stage on %d GPU(s) (%s), gallery uploaded in %.1f s\n",
			count, info[0].name, tclock_wall_s() - t0);
#else
	die("--gpu: this mcceval was built without the GPU library (make -f kernels/gpu.mk build/gpu/mcceval)");
#endif
}

/*
 * The first stage's recall: the share of mated probes whose mate LSS ranks
 * within the best r, for shortlists of several sizes (CPU scan only).
 */
static void
print_mate_recall(const ident_job *job)
{
	static const double fr[] = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05};
	static const int abs_r[] = {100, 250, 500, 1000, 2000, 5000};
	int			n = 0;

	for (int i = 0; i < job->n_prb; i++)
		n += job->mate_rank[i] > 0;
	if (n == 0)
		return;
	printf("first-stage recall (mate within the LSS top r), %d mated probes:\n ", n);
	for (size_t f = 0; f < sizeof(fr) / sizeof(fr[0]); f++)
	{
		int			r = (int) ceil(fr[f] * job->n_gal);
		int			in = 0;

		for (int i = 0; i < job->n_prb; i++)
			in += job->mate_rank[i] > 0 && job->mate_rank[i] <= r;
		printf(" %.2g%% (%d): %.2f%%", 100 * fr[f], r, 100.0 * in / n);
	}
	printf("\n ");
	for (size_t f = 0; f < sizeof(abs_r) / sizeof(abs_r[0]); f++)
	{
		int			in = 0;

		for (int i = 0; i < job->n_prb; i++)
			in += job->mate_rank[i] > 0 && job->mate_rank[i] <= abs_r[f];
		printf(" top %d: %.2f%%", abs_r[f], 100.0 * in / n);
	}
	printf("\n");
}

/* Identification on gallery g[0..ng) and probes p[0..np) with mates. */
static void
run_ident(record *g, int ng, record *p, int np, const int64_t *mate)
{
	ident_job	job = {0};
	pthread_t	th[64];
	mcc_error	err;
	double		t0;
	ident_metrics im[MCC_NMETHODS];
	metrics		curves[MCC_NMETHODS];
	const char *names[MCC_NMETHODS];

	job.gal = g;
	job.n_gal = ng;
	job.prb = p;
	job.n_prb = np;
	job.mate = mate;
	job.n_refine = (int) mcc_refine_count(ng, opt.refine_fraction, opt.refine_min, 1);
	job.top = xmalloc(sizeof(int) * (size_t) np * MCC_NMETHODS);
	job.top_score = xmalloc(sizeof(float) * (size_t) np * MCC_NMETHODS);
	job.mate_rank = xmalloc(sizeof(int) * (size_t) np);
	for (int i = 0; i < np; i++)
		job.mate_rank[i] = 0;
	if (opt.scores)
	{
		job.scores = fopen(opt.scores, "w");
		if (job.scores == NULL)
			die("cannot write %s", opt.scores);
		fprintf(job.scores, "# probe mate candidate");
		for (int k = 0; k < opt.n_methods; k++)
			fprintf(job.scores, " %s", mcc_method_name(opt.methods[k]));
		fputc('\n', job.scores);
	}
	if (mcc_soa_init(&job.soa, opt.profile, ng, ng * 40, &err) != MCC_OK)
		die("%s", err.message);
	for (int i = 0; i < ng; i++)
		if (mcc_soa_append(&job.soa, &g[i].v, i, &err) != MCC_OK)
			die("%s", err.message);
	pthread_mutex_init(&job.lock, NULL);
	if (opt.gpu)
		ident_open_gpu(&job);
	t0 = tclock_wall_s();
	for (int t = 0; t < opt.threads; t++)
		pthread_create(&th[t], NULL, ident_worker, &job);
	for (int t = 0; t < opt.threads; t++)
		pthread_join(th[t], NULL);
	fprintf(stderr, "ident: gallery %d (%u cylinders), %d probes, %d refined each, "
			"%d threads, %.1f s (%s kernel)\n",
			ng, job.soa.n_cyl, np, job.n_refine, opt.threads, tclock_wall_s() - t0,
			mcc_soa_kernel_name());
	fprintf(stderr, "ident: LSS scan %.1f M matches/s per thread; refinement per candidate: "
			"matrix %.1f us",
			(double) ng * np / job.t_scan * 1e-6, 1e6 * job.t_matrix / job.n_refined);
	for (int c = 0; c < opt.n_methods; c++)
		fprintf(stderr, ", %s %.1f us", mcc_method_name(opt.methods[c]),
				1e6 * job.t_method[opt.methods[c]] / job.n_refined);
	fprintf(stderr, "\nident: matrix LSS != scan LSS for %d of %ld candidates; "
			"%d mated probes had no mate in the shortlist\n",
			job.lss_mismatch, job.n_refined, job.mate_missed);
	if (job.scores)
		fclose(job.scores);
#ifdef MCC_EVAL_GPU
	if (opt.gpu_refine)
		fprintf(stderr, "ident: shortlists rescored on the GPU in %.1f s; %ld scores checked "
				"against the CPU, %ld differed\n", job.t_gpu_refine, job.gpu_checked, job.gpu_differ);
#endif
	print_mate_recall(&job);

	{
		int			n_mated = 0;

		for (int i = 0; i < np; i++)
			n_mated += mate[i] >= 0;
		printf("identification: gallery %d, probes %d (mated %d), LSS shortlist %d (%.3g%%)\n",
			   ng, np, n_mated, job.n_refine, 100.0 * job.n_refine / ng);
	}
	printf("  %-14s %10s %10s %8s %8s\n", "method", "FNIR@0", "FNIR@1%", "rank-1", "EER");
	for (int c = 0; c < opt.n_methods; c++)
	{
		int			m = opt.methods[c];

		ident_metrics_of(&job, m, &im[c]);
		curves[c] = im[c].det;
		names[c] = mcc_method_name(m);
		printf("  %-14s %9.2f%% %9.2f%% %7.2f%% %7.2f%%\n", names[c], 100 * im[c].fnir0,
			   100 * im[c].fnir1, 100 * im[c].rank1, 100 * im[c].det.eer);
		if (tsv_file)
			fprintf(tsv_file, "%s\tident\t%s\t%d\t%d\t%.6f\t%.6f\t%.6f\t%.6f\n",
					opt.label ? opt.label : "-", names[c], im[c].n_mated,
					im[c].n_nonmated, im[c].fnir0, im[c].fnir1, im[c].rank1,
					im[c].det.eer);
	}
	if (opt.det)
		write_det(opt.det, opt.title, "FPIR", "FNIR", curves, names, opt.n_methods);
	mcc_soa_free(&job.soa);
	free(job.top);
	free(job.top_score);
}

/* ------------------------------------------------------------------ */
/* command line                                                        */

/* Set a synthetic generator field by name. */
static void
synth_set(const char *kv)
{
	const char *eq = strchr(kv, '=');
	double		v;
	char	   *end;
	size_t		n;

	if (eq == NULL)
		die("--set wants name=value, not \"%s\"", kv);
	n = (size_t) (eq - kv);
	v = strtod(eq + 1, &end);
	if (*end != 0)
		die("--set %s: not a number", kv);
#define FIELD(name, expr) if (n == strlen(#name) && strncmp(kv, #name, n) == 0) { opt.sp.name = expr; return; }
	FIELD(seed, (uint64_t) v);
	FIELD(width, (int) v);
	FIELD(height, (int) v);
	FIELD(dpi, (int) v);
	FIELD(min_minutiae, (int) v);
	FIELD(max_minutiae, (int) v);
	FIELD(max_rotation, v);
	FIELD(max_translation, v);
	FIELD(distortion, v);
	FIELD(p_missing, v);
	FIELD(max_spurious, v);
	FIELD(pos_noise, v);
	FIELD(angle_noise, v);
	FIELD(min_spacing, v);
	FIELD(contact_loss, v);
	FIELD(border, (int) v);
	FIELD(p_type_flip, v);
	FIELD(p_dir_flip, v);
	FIELD(quality_noise, v);
	FIELD(variability, v);
#undef FIELD
	die("--set: unknown generator parameter \"%.*s\"", (int) n, kv);
}

/* Print the generator's settings (they go into docs/accuracy.md). */
static void
print_synth(void)
{
	const mcc_synth_params *s = &opt.sp;

	printf("generator: seed=%llu width=%d height=%d dpi=%d min_minutiae=%d max_minutiae=%d "
		   "max_rotation=%g max_translation=%g distortion=%g p_missing=%g max_spurious=%g "
		   "pos_noise=%g angle_noise=%g min_spacing=%g contact_loss=%g border=%d "
		   "p_type_flip=%g p_dir_flip=%g quality_noise=%g variability=%g\n",
		   (unsigned long long) s->seed, s->width, s->height, s->dpi, s->min_minutiae,
		   s->max_minutiae, s->max_rotation, s->max_translation, s->distortion,
		   s->p_missing, s->max_spurious, s->pos_noise, s->angle_noise, s->min_spacing,
		   s->contact_loss, s->border, s->p_type_flip, s->p_dir_flip, s->quality_noise,
		   s->variability);
}

/* Parse --methods. */
static void
parse_methods(const char *list)
{
	const char *p = list;

	opt.n_methods = 0;
	while (*p)
	{
		const char *e = strchr(p, ',');
		int			len = e ? (int) (e - p) : (int) strlen(p);
		int			m = mcc_method_parse(p, len);

		if (m < 0)
			die("unknown method \"%.*s\" (known: %s)", len, p, mcc_method_list());
		opt.methods[opt.n_methods++] = m;
		p += len + (e ? 1 : 0);
	}
}

/* Parse the options after the mode. */
static void
parse_args(int argc, char **argv)
{
	mcc_synth_defaults(&opt.sp);
	mcc_match_params_default(&opt.mp);
	opt.check_every = 100;
	opt.profile = mcc_profile_by_id(MCC_PROFILE_DEFAULT);
	opt.fingers = 100;
	opt.impressions = 8;
	opt.gallery = 20000;
	opt.probes = 10000;
	opt.baseline_name = "baseline";
	opt.refine_fraction = 0.001;
	opt.refine_min = 100;
	opt.threads = (int) sysconf(_SC_NPROCESSORS_ONLN);
	for (int m = 0; m < MCC_NMETHODS; m++)
		opt.methods[m] = m;
	opt.n_methods = MCC_NMETHODS;
	for (int i = 2; i < argc; i++)
	{
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

#define ARG(name) (strcmp(a, name) == 0 && (v != NULL || (die("%s needs a value", name), 0)) && ++i)
		if (ARG("--dir"))
			opt.dir = v;
		else if (ARG("--ext"))
			opt.ext = v;
		else if (ARG("--frame"))
		{
			if (sscanf(v, "%dx%dx%d", &opt.frame_w, &opt.frame_h, &opt.frame_dpi) != 3)
				die("--frame wants WxHxDPI");
		}
		else if (ARG("--unstretch"))
		{
			if (sscanf(v, "%dx%d", &opt.unstretch_w, &opt.unstretch_h) != 2)
				die("--unstretch wants WxH");
		}
		else if (strcmp(a, "--synth") == 0)
			opt.synth = true;
		else if (ARG("--set"))
			synth_set(v);
		else if (ARG("--fingers"))
			opt.fingers = atoi(v);
		else if (ARG("--impressions"))
			opt.impressions = atoi(v);
		else if (ARG("--gallery"))
			opt.gallery = atoi(v);
		else if (ARG("--probes"))
			opt.probes = atoi(v);
		else if (ARG("--profile"))
		{
			opt.profile = mcc_profile_by_name(v, (int) strlen(v));
			if (opt.profile == NULL)
				die("unknown profile \"%s\"", v);
		}
		else if (ARG("--methods"))
			parse_methods(v);
		else if (ARG("--refine-fraction"))
			opt.refine_fraction = atof(v);
		else if (ARG("--refine-min"))
			opt.refine_min = atoi(v);
		else if (ARG("--threads"))
			opt.threads = atoi(v);
		else if (strcmp(argv[i], "--gpu") == 0)
			opt.gpu = true;
		else if (ARG("--dtr-norm"))
		{
			if (strcmp(v, "sum") == 0)
				opt.mp.dtr.d1 = MCC_D1_SUM;
			else if (strcmp(v, "mean") == 0)
				opt.mp.dtr.d1 = MCC_D1_MEAN;
			else
				die("--dtr-norm wants sum or mean");
		}
		else if (ARG("--cons-score"))
		{
			if (strcmp(v, "count") == 0)
				opt.mp.cons.score = MCC_CONS_COUNT;
			else if (strcmp(v, "sim") == 0)
				opt.mp.cons.score = MCC_CONS_SIM;
			else if (strcmp(v, "count-lss") == 0)
				opt.mp.cons.score = MCC_CONS_COUNT_LSS;
			else
				die("--cons-score wants count, sim or count-lss");
		}
		else if (ARG("--cons-nsel"))
			opt.mp.cons.n_sel = atoi(v);
		else if (ARG("--cons-ts"))
			opt.mp.cons.t_s = atof(v);
		else if (ARG("--cons-ttheta"))
			opt.mp.cons.t_theta = atof(v) * M_PI / 180.0;
		else if (strcmp(argv[i], "--gpu-refine") == 0)
			opt.gpu = opt.gpu_refine = true;
		else if (ARG("--check-every"))
			opt.check_every = atoi(v);
		else if (ARG("--recall-depth"))
			opt.recall_depth = atoi(v);
		else if (ARG("--fused-np"))
			parse_fused_np(&opt.mp, v);
		else if (ARG("--relax-params"))
			parse_relax(&opt.mp.relax, v);
		else if (ARG("--dtr-params"))
			parse_relax(&opt.mp.dtr, v);
		else if (ARG("--relax-nr"))
			opt.mp.relax.max_nr = opt.mp.dtr.max_nr = atoi(v);
		else if (ARG("--baseline"))
			opt.baseline = v;
		else if (ARG("--baseline-name"))
			opt.baseline_name = v;
		else if (ARG("--det"))
			opt.det = v;
		else if (ARG("--title"))
			opt.title = v;
		else if (ARG("--tsv"))
			opt.tsv = v;
		else if (ARG("--label"))
			opt.label = v;
		else if (ARG("--scores"))
			opt.scores = v;
		else
			die("unknown option %s", a);
#undef ARG
	}
	if (opt.threads < 1)
		opt.threads = 1;
	if (opt.threads > 64)
		opt.threads = 64;
	if ((opt.dir == NULL) == !opt.synth)
		die("give either --dir DIR or --synth");
	if (opt.synth)
	{
		mcc_error	err;

		if (mcc_synth_check(&opt.sp, &err) != MCC_OK)
			die("%s", err.message);
	}
	mcc_match_params_prepare(&opt.mp);
}

/* Synthetic FVC-style data set: fingers x impressions. */
static record *
synth_fvc(int *n)
{
	record	   *r = xmalloc(sizeof(record) * (size_t) opt.fingers * opt.impressions);

	*n = opt.fingers * opt.impressions;
	for (int f = 0; f < opt.fingers; f++)
		for (int i = 0; i < opt.impressions; i++)
		{
			record	   *x = &r[f * opt.impressions + i];

			memset(x, 0, sizeof(*x));
			x->finger = f;
			x->imp = i;
		}
	synth_build(r, *n);
	return r;
}

/* Identification data: synthetic, or split from a directory. */
static void
ident_data(record **g, int *ng, record **p, int *np, int64_t **mate)
{
	if (opt.synth)
	{
		int			half = opt.probes / 2;

		*ng = opt.gallery;
		*np = opt.probes;
		*g = xmalloc(sizeof(record) * *ng);
		*p = xmalloc(sizeof(record) * *np);
		*mate = xmalloc(sizeof(int64_t) * *np);
		for (int i = 0; i < *ng; i++)
		{
			memset(&(*g)[i], 0, sizeof(record));
			(*g)[i].finger = i;
			(*g)[i].imp = 0;
		}
		for (int i = 0; i < *np; i++)
		{
			memset(&(*p)[i], 0, sizeof(record));
			(*p)[i].finger = i < half ? i : opt.gallery + (i - half);
			(*p)[i].imp = 1;
			(*mate)[i] = i < half && i < opt.gallery ? i : -1;
		}
		synth_build(*g, *ng);
		synth_build(*p, *np);
	}
	else
	{
		int			n;
		record	   *r = load_dir(opt.dir, &n);
		int64_t		fingers[4096];
		int			nf = 0;

		for (int i = 0; i < n; i++)
			if (nf == 0 || fingers[nf - 1] != r[i].finger)
				fingers[nf++] = r[i].finger;
		*g = xmalloc(sizeof(record) * n);
		*p = xmalloc(sizeof(record) * n);
		*mate = xmalloc(sizeof(int64_t) * n);
		*ng = 0;
		*np = 0;
		for (int i = 0; i < n; i++)
		{
			int			fi = 0;

			while (fingers[fi] != r[i].finger)
				fi++;
			if (fi < (nf + 1) / 2 && (i == 0 || r[i - 1].finger != r[i].finger))
				(*g)[(*ng)++] = r[i];
		}
		for (int i = 0; i < n; i++)
		{
			int			fi = 0;

			while (fingers[fi] != r[i].finger)
				fi++;
			if (fi < (nf + 1) / 2 && (i == 0 || r[i - 1].finger != r[i].finger))
				continue;
			(*p)[*np] = r[i];
			(*mate)[*np] = -1;
			for (int k = 0; k < *ng; k++)
				if ((*g)[k].finger == r[i].finger)
					(*mate)[*np] = k;
			(*np)++;
		}
		free(r);
	}
}

int
main(int argc, char **argv)
{
	if (argc < 2 || (strcmp(argv[1], "fvc") != 0 && strcmp(argv[1], "ident") != 0))
	{
		fprintf(stderr, "usage: mcceval fvc|ident (--dir DIR | --synth) [options]\n"
				"(see the comment at the top of test/tools/mcceval.c)\n");
		return 2;
	}
	opt.mode = argv[1];
	parse_args(argc, argv);
	if (opt.tsv && (tsv_file = fopen(opt.tsv, "a")) == NULL)
		die("cannot write %s", opt.tsv);
	mcc_lss_init();
	if (getenv("MCC_MATCH_KERNEL") != NULL && mcc_match_set_kernel(getenv("MCC_MATCH_KERNEL")) != 0)
		die("MCC_MATCH_KERNEL: kernel %s is unknown or not supported here", getenv("MCC_MATCH_KERNEL"));
	if (opt.synth)
		print_synth();
	if (strcmp(opt.mode, "fvc") == 0)
	{
		int			n;
		record	   *r = opt.synth ? synth_fvc(&n) : load_dir(opt.dir, &n);

		run_fvc(r, n);
	}
	else
	{
		record	   *g;
		record	   *p;
		int			ng;
		int			np;
		int64_t    *mate;

		ident_data(&g, &ng, &p, &np, &mate);
		run_ident(g, ng, p, np, mate);
	}
	if (tsv_file)
		fclose(tsv_file);
	return 0;
}
