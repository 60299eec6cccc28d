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
#include <stddef.h>

#include "mcceval.h"
#include "mcc_clamp.h"
#include "mcc_cmp.h"
#include "record_file.h"
#include "../unit/testargs.h"

options opt;

/* Print a message and exit with status 2. */
void
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
void *
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
	mcc_error	err;

	if (rf_read(path, ext, opt.frame_w, opt.frame_h, opt.frame_dpi, ms, &err) != MCC_OK)
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

	return MCC_CMP_THEN(MCC_CMP(a->finger, b->finger), a->imp, b->imp);
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
	long		finger;
	int			imp;
	const char *dot;
	mcc_minutiae *ms = xmalloc(sizeof(mcc_minutiae));

	if (d == NULL)
		die("cannot open directory %s: %s", dir, strerror(errno));
	while ((e = rf_next(d, opt.ext, &finger, &imp, &dot)) != NULL)
	{
		char		path[4096];

		if (!rf_grow((void **) &r, n, &cap, sizeof(record), 128))
			die("out of memory");
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
	atomic_int	next;			/* the next template to build */
} synth_job;

/* Thread body: build synthetic templates until none is left. */
static void *
synth_worker(void *arg)
{
	synth_job  *job = arg;
	mcc_minutiae *master = xmalloc(sizeof(mcc_minutiae));
	mcc_minutiae *imp = xmalloc(sizeof(mcc_minutiae));
	int			i;

	while ((i = mcc_job_claim(&job->next, 1, job->n)) >= 0)
	{
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

	for (int i = 0; i < n; i++)
		snprintf(r[i].name, sizeof(r[i].name), "%ld_%d", (long) r[i].finger, r[i].imp);
	mcc_job_run_shared(opt.threads, synth_worker, &job);
}

/* ------------------------------------------------------------------ */
/* metrics                                                             */


/* Descending score. */
static int
cmp_labelled(const void *pa, const void *pb)
{
	double		a = ((const labelled *) pa)->s;
	double		b = ((const labelled *) pb)->s;

	return (a < b) - (a > b);
}


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
void
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

FILE	   *tsv_file;

/* Name of column c of the result table. */
const char *
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
void
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
/* option values                                                       */

/* The n comma-separated numbers of an option into x (any after them ignored). */
static void
parse_numbers(const char *v, double *x, int n, const char *what)
{
	int			k = 0;
	char	   *end;

	while (k < n)
	{
		x[k++] = strtod(v, &end);
		if (end == v)
			die("bad %s \"%s\"", what, v);
		if (*end != ',')
			break;
		v = end + 1;
	}
	if (k != n)
		die("%s: %d numbers", what, n);
}

/*
 * --relax-params / --dtr-params "wr,nrel,mu1,tau1,mu2,tau2,mu3,tau3": the
 * constants of a relaxation (angles in radians).
 */
static void
parse_relax(const char *v, void *dst)
{
	mcc_relax_params *rp = dst;
	double		x[8];

	parse_numbers(v, x, 8, "relaxation constants");
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
parse_fused_np(const char *v, void *dst)
{
	mcc_match_params *mp = dst;
	double		x[4];

	parse_numbers(v, x, 4, "--fused-np");
	mp->fused_dtr_np = (mcc_np_params) {(int) x[0], (int) x[1], x[2], x[3]};
}

/* ------------------------------------------------------------------ */
/* command line                                                        */

/*
 * The generator's fields by name, in the order print_synth prints them:
 * --set looks names up here, so every printed field can be set.
 */
typedef struct synth_field
{
	const char *name;
	char		kind;			/* 'u' uint64_t, 'i' int, 'd' double */
	size_t		off;
} synth_field;

#define SYNTH_FIELD(f, k) {#f, k, offsetof(mcc_synth_params, f)}
static const synth_field synth_fields[] = {
	SYNTH_FIELD(seed, 'u'), SYNTH_FIELD(width, 'i'), SYNTH_FIELD(height, 'i'), SYNTH_FIELD(dpi, 'i'),
	SYNTH_FIELD(min_minutiae, 'i'), SYNTH_FIELD(max_minutiae, 'i'), SYNTH_FIELD(max_rotation, 'd'),
	SYNTH_FIELD(max_translation, 'd'), SYNTH_FIELD(distortion, 'd'), SYNTH_FIELD(p_missing, 'd'),
	SYNTH_FIELD(max_spurious, 'd'), SYNTH_FIELD(pos_noise, 'd'), SYNTH_FIELD(angle_noise, 'd'),
	SYNTH_FIELD(min_spacing, 'd'), SYNTH_FIELD(contact_loss, 'd'), SYNTH_FIELD(border, 'i'),
	SYNTH_FIELD(p_type_flip, 'd'), SYNTH_FIELD(p_dir_flip, 'd'), SYNTH_FIELD(quality_noise, 'd'),
	SYNTH_FIELD(variability, 'd'),
};
#undef SYNTH_FIELD

#define N_SYNTH_FIELDS ((int) (sizeof(synth_fields) / sizeof(synth_fields[0])))

/* --set name=value: a synthetic generator field by name. */
static void
synth_set(const char *kv, void *dst)
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
	for (int i = 0; i < N_SYNTH_FIELDS; i++)
	{
		const synth_field *f = &synth_fields[i];
		char	   *at = (char *) dst + f->off;

		if (strlen(f->name) != n || strncmp(kv, f->name, n) != 0)
			continue;
		if (f->kind == 'u')
			*(uint64_t *) at = (uint64_t) v;
		else if (f->kind == 'i')
			*(int *) at = (int) v;
		else
			*(double *) at = v;
		return;
	}
	die("--set: unknown generator parameter \"%.*s\"", (int) n, kv);
}

/* Print the generator's settings (they go into docs/accuracy.md). */
static void
print_synth(void)
{
	printf("generator:");
	for (int i = 0; i < N_SYNTH_FIELDS; i++)
	{
		const synth_field *f = &synth_fields[i];
		const char *at = (const char *) &opt.sp + f->off;

		if (f->kind == 'u')
			printf(" %s=%llu", f->name, (unsigned long long) *(const uint64_t *) at);
		else if (f->kind == 'i')
			printf(" %s=%d", f->name, *(const int *) at);
		else
			printf(" %s=%g", f->name, *(const double *) at);
	}
	printf("\n");
}

/* --methods a,b,...: the methods to run, in the order given. */
static void
parse_methods(const char *list, void *dst)
{
	options    *o = dst;
	const char *p = list;

	o->n_methods = 0;
	while (*p)
	{
		const char *e = strchr(p, ',');
		int			len = e ? (int) (e - p) : (int) strlen(p);
		int			m = mcc_method_parse(p, len);

		if (m < 0)
			die("unknown method \"%.*s\" (known: %s)", len, p, mcc_method_list());
		o->methods[o->n_methods++] = m;
		p += len + (e ? 1 : 0);
	}
}

/* --frame WxHxDPI */
static void
parse_frame(const char *v, void *dst)
{
	options    *o = dst;

	if (sscanf(v, "%dx%dx%d", &o->frame_w, &o->frame_h, &o->frame_dpi) != 3)
		die("--frame wants WxHxDPI");
}

/* --unstretch WxH */
static void
parse_unstretch(const char *v, void *dst)
{
	options    *o = dst;

	if (sscanf(v, "%dx%d", &o->unstretch_w, &o->unstretch_h) != 2)
		die("--unstretch wants WxH");
}

/* --profile NAME */
static void
parse_profile(const char *v, void *dst)
{
	const mcc_profile **p = dst;

	if ((*p = mcc_profile_by_name(v, (int) strlen(v))) == NULL)
		die("unknown profile \"%s\"", v);
}

/* --dtr-norm sum|mean */
static void
parse_dtr_norm(const char *v, void *dst)
{
	mcc_d1_norm *d1 = dst;

	if (strcmp(v, "sum") == 0)
		*d1 = MCC_D1_SUM;
	else if (strcmp(v, "mean") == 0)
		*d1 = MCC_D1_MEAN;
	else
		die("--dtr-norm wants sum or mean");
}

/* --cons-score count|sim|count-lss */
static void
parse_cons_score(const char *v, void *dst)
{
	mcc_cons_score *score = dst;

	if (strcmp(v, "count") == 0)
		*score = MCC_CONS_COUNT;
	else if (strcmp(v, "sim") == 0)
		*score = MCC_CONS_SIM;
	else if (strcmp(v, "count-lss") == 0)
		*score = MCC_CONS_COUNT_LSS;
	else
		die("--cons-score wants count, sim or count-lss");
}

/* --cons-ttheta DEG, kept in radians */
static void
parse_degrees(const char *v, void *dst)
{
	*(double *) dst = atof(v) * M_PI / 180.0;
}

/* --relax-nr N: the cap of both relaxations */
static void
parse_relax_nr(const char *v, void *dst)
{
	mcc_match_params *mp = dst;

	mp->relax.max_nr = mp->dtr.max_nr = atoi(v);
}

/* Parse the options after the mode. */
static void
parse_args(int argc, char **argv)
{
	const targ_opt opts[] = {
		OPT_STR("--dir", &opt.dir, "DIR"), OPT_STR("--ext", &opt.ext, "EXT"),
		OPT_FN("--frame", parse_frame, &opt, "WxHxDPI"),
		OPT_FN("--unstretch", parse_unstretch, &opt, "WxH"),
		OPT_BOOL("--synth", &opt.synth), OPT_FN("--set", synth_set, &opt.sp, "NAME=VALUE"),
		OPT_INT("--fingers", &opt.fingers, "N"), OPT_INT("--impressions", &opt.impressions, "I"),
		OPT_INT("--gallery", &opt.gallery, "N"), OPT_INT("--probes", &opt.probes, "M"),
		OPT_FN("--profile", parse_profile, &opt.profile, "NAME"),
		OPT_FN("--methods", parse_methods, &opt, "a,b,..."),
		OPT_DOUBLE("--refine-fraction", &opt.refine_fraction, "F"),
		OPT_INT("--refine-min", &opt.refine_min, "K"), OPT_INT("--threads", &opt.threads, "T"),
		OPT_BOOL("--gpu", &opt.gpu),
		OPT_FN("--dtr-norm", parse_dtr_norm, &opt.mp.dtr.d1, "sum|mean"),
		OPT_FN("--cons-score", parse_cons_score, &opt.mp.cons.score, "count|sim|count-lss"),
		OPT_INT("--cons-nsel", &opt.mp.cons.n_sel, "N"), OPT_DOUBLE("--cons-ts", &opt.mp.cons.t_s, "PX"),
		OPT_FN("--cons-ttheta", parse_degrees, &opt.mp.cons.t_theta, "DEG"),
		OPT_BOOL("--gpu-refine", &opt.gpu_refine), OPT_INT("--check-every", &opt.check_every, "N"),
		OPT_INT("--recall-depth", &opt.recall_depth, "D"),
		OPT_FN("--fused-np", parse_fused_np, &opt.mp, "MIN,MAX,MU,TAU"),
		OPT_FN("--relax-params", parse_relax, &opt.mp.relax, "W,NREL,MU1,TAU1,MU2,TAU2,MU3,TAU3"),
		OPT_FN("--dtr-params", parse_relax, &opt.mp.dtr, "W,NREL,MU1,TAU1,MU2,TAU2,MU3,TAU3"),
		OPT_FN("--relax-nr", parse_relax_nr, &opt.mp, "N"),
		OPT_STR("--baseline", &opt.baseline, "FILE"), OPT_STR("--baseline-name", &opt.baseline_name, "NAME"),
		OPT_STR("--det", &opt.det, "PREFIX"), OPT_STR("--title", &opt.title, "TEXT"),
		OPT_STR("--tsv", &opt.tsv, "FILE"), OPT_STR("--label", &opt.label, "TEXT"),
		OPT_STR("--scores", &opt.scores, "FILE"), OPT_END
	};

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
	targ_parse_from(argc, argv, 2, opts);
	/* the refinement on the GPU needs its LSS stage there */
	if (opt.gpu_refine)
		opt.gpu = true;
	opt.threads = MCC_CLAMP(opt.threads, 1, 64);
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
