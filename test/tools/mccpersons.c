/*
 * mccpersons: accuracy of identify_persons()'s fusion (docs/persons.md,
 * docs/accuracy.md section 11): FNIR at FPIR = 0 and 1 % with one probe
 * finger against two and four, on the same persons and the same gallery.
 *
 *   mccpersons --synth [--persons N] [--searches M] [--fingers F] [model options]
 *   mccpersons --dir DIR [--dir DIR ...] [--ext EXT]
 *
 * The pipeline is identify_persons()'s definition, with the core functions
 * that identify() uses: for every probe finger, LSS of the probe against
 * every gallery row (mcc_soa_scan) and the n' = mcc_refine_count(rows,
 * 0.001, 100, 10) best rows (ties by row); the persons of those rows are the
 * candidates; a candidate's score for a probe finger is the 'fused' score
 * (mcc_match_candidate) of its template at that finger's position, 0 when it
 * has none; the person's score is the mean over the probe fingers, in double
 * then rounded to single precision as the SQL does; the first candidate is
 * the best score, ties by the smaller person.
 *
 * Data:
 *   --synth      persons 0..N-1 enrolled with F fingers each (positions
 *                1..F, synthetic finger p * F + j, impression 0, defaults
 *                of mcc_synth.h unless changed with the model options of mccgen,
 *                synth_cli.h: --seed 7 --missing 0.15 ...); mated
 *                searches: impression 1 of persons 0..M/2-1; non-mated:
 *                impression 1 of persons N..N+M/2-1. Defaults N = 2500,
 *                M = 2000, F = 4.
 *   --dir DIR    FVC naming (FINGER_IMPRESSION.EXT, any format mcceval
 *                reads: .xyt, .json, ISO/ANSI); in each directory the
 *                fingers sorted by number are paired into two-finger persons
 *                (1st and 2nd finger, 3rd and 4th, ...; positions 1 and 2).
 *                Two folds: the persons of even rank form the gallery
 *                (their first impression) and are searched with every other
 *                impression, the persons of odd rank are searched with every
 *                impression as non-mated; then the roles swap. Counts are
 *                pooled over the folds, each fold with its own threshold.
 *
 * Searches use the probe fingers at positions {1}, {1,2} and, with F >= 4,
 * {1,2,3,4} (the same persons, the same gallery of F fingers per person).
 *
 * Options: --threads T (default 2), --refine-min K (default 100).
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mcc_iso.h"
#include "mcc_job.h"
#include "mcc_json.h"
#include "mcc_lss.h"
#include "mcc_match.h"
#include "mcc_soa.h"
#include "mcc_synth.h"
#include "mcc_template.h"
#include "mcc_topk.h"
#include "mcc_xyt.h"
#include "../unit/testclock.h"
#include "../unit/testsort.h"

/* the model options of the synthetic tools (their other helpers unused here) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "synth_cli.h"
#include "record_file.h"
#pragma GCC diagnostic pop

#define MAX_FINGERS 4			/* positions searched: 1..4 */
#define MAX_DIRS 16
#define N_CONFIGS 3				/* probe fingers {1}, {1,2}, {1,2,3,4} */

static const int config_fingers[N_CONFIGS] = {1, 2, 4};

/* A template with its person and position (1-based). */
typedef struct tpl
{
	int			person;
	int			pos;
	uint8_t    *blob;
	size_t		size;
	mcc_template_view v;
} tpl;

/* One search: a person's probe fingers; mated if the person is enrolled. */
typedef struct search
{
	int			person;			/* gallery person, or -1 */
	tpl		   *finger[MAX_FINGERS];	/* probe at position j + 1, or NULL */
} search;

/* One gallery and the searches against it. */
typedef struct fold
{
	tpl		   *gal;
	int			n_gal;
	int			n_persons;		/* persons 0..n_persons-1 */
	int			n_pos;			/* positions per person */
	int		   *row_of;			/* [person * n_pos + pos - 1]: gallery row or -1 */
	mcc_soa		soa;
	search	   *s;
	int			n_s;
	int			n_refine;
	/* per search and configuration: first candidate and its score */
	int		   *top;
	float	   *top_score;
	atomic_int	next;			/* the next search */
	long		lost;			/* mated searches whose mate no shortlist held (4 fingers) */
} fold;

static struct
{
	bool		synth;
	mcc_synth_params sp;
	int			persons;
	int			searches;
	int			fingers;
	const char *dir[MAX_DIRS];
	int			n_dir;
	const char *ext;
	int			threads;
	int			refine_min;
	const mcc_profile *profile;
} opt;

static void
die(const char *fmt,...)
{
	va_list		ap;

	fputs("mccpersons: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void *
xcalloc(size_t n, size_t size)
{
	void	   *p = calloc(n ? n : 1, size);

	if (p == NULL)
		die("out of memory");
	return p;
}

/* Build the template of ms into t. */
static void
tpl_build(tpl *t, const mcc_minutiae *ms)
{
	mcc_error	err;

	if (mcc_template_build(ms, opt.profile, NULL, &t->size, &err) != MCC_OK)
		die("%s", err.message);
	t->blob = xcalloc(1, t->size);
	if (mcc_template_build(ms, opt.profile, t->blob, &t->size, &err) != MCC_OK ||
		mcc_template_open(t->blob, t->size, &t->v, &err) != MCC_OK)
		die("%s", err.message);
}

/* ------------------------------------------------------------------ */
/* the search of identify_persons()                                    */

typedef struct worker_mem
{
	mcc_probe  *q;
	mcc_match_work *w;
	float	   *lss;			/* one score per gallery row */
	mcc_hit    *hits;
	float	   *fused;			/* [finger * n_persons + person], NAN = not yet */
	int		   *cand;			/* candidate persons */
	bool	   *is_cand;
} worker_mem;

/* The n_refine best rows by LSS for probe t, into out (sorted); returns how many. */
static int
shortlist(fold *f, worker_mem *m, const tpl *t, mcc_hit *out)
{
	mcc_topk	tk;

	mcc_probe_init(m->q, &t->v);
	mcc_soa_scan(m->q, &f->soa, 0, f->soa.n_tpl, m->lss);
	mcc_topk_init(&tk, f->n_refine, out, f->n_refine);
	for (int r = 0; r < f->n_gal; r++)
		mcc_topk_push(&tk, m->lss[r], r);
	mcc_topk_sort(&tk);
	return (int) tk.n;
}

/*
 * Fill the fused score of probe finger j against each candidate's template
 * at position j + 1 (0 if it has none); scores already known are kept.
 */
static void
score_finger(fold *f, worker_mem *m, const search *s, int j, int n_cand)
{
	bool		probe_set = false;
	mcc_error	err;

	for (int c = 0; c < n_cand; c++)
	{
		int			p = m->cand[c];
		float	   *slot = &m->fused[(size_t) j * f->n_persons + p];
		int			row = j < f->n_pos ? f->row_of[p * f->n_pos + j] : -1;

		if (!isnan(*slot))
			continue;
		*slot = 0.0f;
		if (row < 0 || s->finger[j] == NULL)
			continue;
		if (!probe_set)
			mcc_match_set_probe(m->w, &s->finger[j]->v);
		probe_set = true;
		if (mcc_match_candidate(m->w, &f->gal[row].v, MCC_METHOD_BEST, NULL, slot, &err) != MCC_OK)
			die("%s", err.message);
	}
}

/* Search s with the first nf probe fingers; the first candidate into *top, *score. */
static void
search_config(fold *f, worker_mem *m, const search *s, int nf, const int *n_hits,
			  int *top, float *score)
{
	int			n_cand = 0;

	for (int j = 0; j < nf; j++)
		for (int c = 0; c < n_hits[j]; c++)
		{
			int			p = f->gal[m->hits[(size_t) j * f->n_refine + c].id].person;

			if (!m->is_cand[p])
			{
				m->is_cand[p] = true;
				m->cand[n_cand++] = p;
			}
		}
	for (int j = 0; j < nf; j++)
		score_finger(f, m, s, j, n_cand);
	*top = -1;
	*score = -1.0f;
	for (int c = 0; c < n_cand; c++)
	{
		int			p = m->cand[c];
		double		sum = 0;
		float		fs;

		for (int j = 0; j < nf; j++)
			sum += m->fused[(size_t) j * f->n_persons + p];
		fs = (float) (sum / nf);
		if (*top < 0 || fs > *score || (fs == *score && p < *top))
		{
			*top = p;
			*score = fs;
		}
		m->is_cand[p] = false;
	}
}

static void *
worker(void *arg)
{
	fold	   *f = arg;
	worker_mem	m;
	int			i;

	m.q = aligned_alloc(64, (mcc_probe_size() + 63) & ~(size_t) 63);
	m.w = xcalloc(1, mcc_match_work_size());
	m.lss = xcalloc(f->n_gal, sizeof(float));
	m.hits = xcalloc((size_t) f->n_refine * MAX_FINGERS, sizeof(mcc_hit));
	m.fused = xcalloc((size_t) MAX_FINGERS * f->n_persons, sizeof(float));
	m.cand = xcalloc(f->n_persons, sizeof(int));
	m.is_cand = xcalloc(f->n_persons, sizeof(bool));
	if (m.q == NULL)
		die("out of memory");
	mcc_match_work_init(m.w);
	while ((i = mcc_job_claim(&f->next, 1, f->n_s)) >= 0)
	{
		int			n_hits[MAX_FINGERS] = {0};
		const search *s = &f->s[i];
		bool		held = false;

		for (size_t x = 0; x < (size_t) MAX_FINGERS * f->n_persons; x++)
			m.fused[x] = NAN;
		for (int j = 0; j < MAX_FINGERS; j++)
		{
			if (s->finger[j] == NULL)
				continue;
			mcc_hit    *out = m.hits + (size_t) j * f->n_refine;

			n_hits[j] = shortlist(f, &m, s->finger[j], out);
			for (int c = 0; c < n_hits[j]; c++)
				held |= s->person >= 0 && f->gal[out[c].id].person == s->person;
		}
		for (int c = 0; c < N_CONFIGS && config_fingers[c] <= f->n_pos; c++)
			search_config(f, &m, s, config_fingers[c], n_hits,
						  &f->top[(size_t) i * N_CONFIGS + c],
						  &f->top_score[(size_t) i * N_CONFIGS + c]);
		if (s->person >= 0 && !held)
			__atomic_add_fetch(&f->lost, 1, __ATOMIC_RELAXED);
	}
	free(m.q);
	free(m.w);
	free(m.lss);
	free(m.hits);
	free(m.fused);
	free(m.cand);
	free(m.is_cand);
	return NULL;
}

/* Run every search of f on opt.threads threads. */
static void
run_fold(fold *f)
{
	mcc_error	err;
	int			nt = opt.threads < 64 ? opt.threads : 64;

	if (mcc_soa_init(&f->soa, opt.profile, f->n_gal, f->n_gal * 48, &err) != MCC_OK)
		die("%s", err.message);
	for (int r = 0; r < f->n_gal; r++)
		if (mcc_soa_append(&f->soa, &f->gal[r].v, r, &err) != MCC_OK)
			die("%s", err.message);
	f->row_of = xcalloc((size_t) f->n_persons * f->n_pos, sizeof(int));
	for (int x = 0; x < f->n_persons * f->n_pos; x++)
		f->row_of[x] = -1;
	for (int r = 0; r < f->n_gal; r++)
		f->row_of[f->gal[r].person * f->n_pos + f->gal[r].pos - 1] = r;
	f->n_refine = (int) mcc_refine_count(f->n_gal, 0.001, opt.refine_min, 10);
	f->top = xcalloc((size_t) f->n_s * N_CONFIGS, sizeof(int));
	f->top_score = xcalloc((size_t) f->n_s * N_CONFIGS, sizeof(float));
	mcc_job_run_shared(nt, worker, f);
	mcc_soa_free(&f->soa);
}

/* ------------------------------------------------------------------ */
/* metrics                                                             */

typedef struct counts
{
	long		mated;
	long		nonmated;
	long		fn0;			/* mated searches missed at FPIR = 0 */
	long		fn1;			/* ... at FPIR = 1 % */
	long		rank1;
} counts;

/*
 * Add fold f's counts for configuration c: a mated search succeeds at
 * threshold t when its first candidate is the mate with a score above t;
 * FPIR = x: t is the (floor(x n) + 1)-th best first score of the n
 * non-mated searches (as mcceval ident).
 */
static void
count_fold(const fold *f, int c, counts *k)
{
	float	   *nm = xcalloc(f->n_s, sizeof(float));
	int			n_nm = 0;

	for (int i = 0; i < f->n_s; i++)
		if (f->s[i].person < 0)
			nm[n_nm++] = f->top_score[(size_t) i * N_CONFIGS + c];
	qsort(nm, n_nm, sizeof(float), tsort_float_desc);
	for (int i = 0; i < f->n_s; i++)
	{
		size_t		at = (size_t) i * N_CONFIGS + c;
		int			a1 = (int) floor(0.01 * n_nm);
		float		t0 = n_nm > 0 ? nm[0] : -INFINITY;
		float		t1 = a1 < n_nm ? nm[a1] : -INFINITY;
		bool		hit;

		if (f->s[i].person < 0)
			continue;
		hit = f->top[at] == f->s[i].person;
		k->mated++;
		k->rank1 += hit;
		k->fn0 += !(hit && f->top_score[at] > t0);
		k->fn1 += !(hit && f->top_score[at] > t1);
	}
	k->nonmated += n_nm;
	free(nm);
}

/* ------------------------------------------------------------------ */
/* data                                                                */

/* Synthetic: one fold, F fingers per person. */
static fold *
synth_fold(int *n_folds)
{
	fold	   *f = xcalloc(1, sizeof(fold));
	int			np = opt.persons;
	int			half = opt.searches / 2;
	int			nfg = opt.fingers;
	mcc_minutiae *master = xcalloc(1, sizeof(mcc_minutiae));
	mcc_minutiae *imp = xcalloc(1, sizeof(mcc_minutiae));
	tpl		   *probes = xcalloc((size_t) 2 * half * nfg, sizeof(tpl));

	f->n_persons = np;
	f->n_pos = nfg;
	f->n_gal = np * nfg;
	f->gal = xcalloc(f->n_gal, sizeof(tpl));
	f->n_s = 2 * half;
	f->s = xcalloc(f->n_s, sizeof(search));
	for (int p = 0; p < np; p++)
		for (int j = 0; j < nfg; j++)
		{
			uint64_t	finger = (uint64_t) p * nfg + j;
			tpl		   *t = &f->gal[p * nfg + j];

			mcc_synth_master(&opt.sp, finger, master);
			mcc_synth_impression(&opt.sp, master, finger, 0, imp);
			tpl_build(t, imp);
			t->person = p;
			t->pos = j + 1;
		}
	for (int i = 0; i < f->n_s; i++)
	{
		int			p = i < half ? i : np + (i - half);

		f->s[i].person = i < half ? p : -1;
		for (int j = 0; j < nfg && j < MAX_FINGERS; j++)
		{
			uint64_t	finger = (uint64_t) p * nfg + j;
			tpl		   *t = &probes[(size_t) i * nfg + j];

			mcc_synth_master(&opt.sp, finger, master);
			mcc_synth_impression(&opt.sp, master, finger, 1, imp);
			tpl_build(t, imp);
			t->pos = j + 1;
			f->s[i].finger[j] = t;
		}
	}
	free(master);
	free(imp);
	*n_folds = 1;
	return f;
}

/* Read one record file (xyt, json, or an ISO/ANSI record). */
static void
read_record(const char *path, const char *ext, mcc_minutiae *ms)
{
	mcc_error	err;

	if (rf_read(path, ext, 0, 0, 500, ms, &err) != MCC_OK)
		die("%s: %s", path, err.message);
}

/* A record of a directory before persons are formed. */
typedef struct rec
{
	int			dir;
	long		finger;
	int			imp;
	tpl			t;
} rec;

static int
cmp_rec(const void *pa, const void *pb)
{
	const rec  *a = pa;
	const rec  *b = pb;

	if (a->dir != b->dir)
		return a->dir - b->dir;
	if (a->finger != b->finger)
		return a->finger < b->finger ? -1 : 1;
	return a->imp - b->imp;
}

/* Every FINGER_IMPRESSION.EXT record of the directories, sorted. */
static rec *
load_dirs(int *n_out)
{
	rec		   *r = NULL;
	int			n = 0;
	int			cap = 0;
	mcc_minutiae *ms = xcalloc(1, sizeof(mcc_minutiae));

	for (int d = 0; d < opt.n_dir; d++)
	{
		DIR		   *dp = opendir(opt.dir[d]);
		struct dirent *e;
		long		finger;
		int			imp;
		const char *dot;

		if (dp == NULL)
			die("cannot open directory %s: %s", opt.dir[d], strerror(errno));
		while ((e = rf_next(dp, opt.ext, &finger, &imp, &dot)) != NULL)
		{
			char		path[4096];

			if (!rf_grow((void **) &r, n, &cap, sizeof(rec), 256))
				die("out of memory");
			snprintf(path, sizeof(path), "%s/%s", opt.dir[d], e->d_name);
			read_record(path, dot + 1, ms);
			memset(&r[n], 0, sizeof(rec));
			r[n].dir = d;
			r[n].finger = finger;
			r[n].imp = imp;
			tpl_build(&r[n].t, ms);
			n++;
		}
		closedir(dp);
	}
	free(ms);
	if (n == 0)
		die("no FINGER_IMPRESSION records found");
	qsort(r, n, sizeof(rec), cmp_rec);
	*n_out = n;
	return r;
}

/*
 * Real data: persons = consecutive finger pairs of a directory; person
 * numbers global (pairs in directory order). Fold g: gallery = first
 * impression of persons with person % 2 == g; mated searches = their other
 * impressions; non-mated = every impression of the others. The persons of
 * a fold are renumbered 0.. in the gallery (non-mated get -1).
 */
static fold *
dir_folds(int *n_folds)
{
	int			n;
	rec		   *r = load_dirs(&n);
	int		   *person = xcalloc(n, sizeof(int));
	int		   *pos = xcalloc(n, sizeof(int));
	int			n_persons = 0;
	int			max_imp = 0;
	fold	   *folds = xcalloc(2, sizeof(fold));

	/* number the fingers of each directory, pair them */
	for (int i = 0, rank = -1; i < n; i++)
	{
		if (i == 0 || r[i].dir != r[i - 1].dir)
			rank = -1;
		if (i == 0 || r[i].dir != r[i - 1].dir || r[i].finger != r[i - 1].finger)
		{
			rank++;
			if (rank % 2 == 0)
				n_persons++;
		}
		person[i] = n_persons - 1;
		pos[i] = rank % 2 + 1;
		r[i].t.person = person[i];
		r[i].t.pos = pos[i];
		if (r[i].imp > max_imp)
			max_imp = r[i].imp;
	}
	for (int g = 0; g < 2; g++)
	{
		fold	   *f = &folds[g];
		int		   *local = xcalloc(n_persons, sizeof(int));
		int			first_imp = INT32_MAX;

		for (int i = 0; i < n; i++)
			if (r[i].imp < first_imp)
				first_imp = r[i].imp;
		f->n_pos = 2;
		for (int p = 0; p < n_persons; p++)
			local[p] = p % 2 == g ? f->n_persons++ : -1;
		f->gal = xcalloc(n, sizeof(tpl));
		f->s = xcalloc((size_t) n_persons * (max_imp + 1), sizeof(search));
		for (int i = 0; i < n; i++)
			if (local[person[i]] >= 0 && r[i].imp == first_imp)
			{
				f->gal[f->n_gal] = r[i].t;
				f->gal[f->n_gal++].person = local[person[i]];
			}
		/* one search per person and impression (its fingers at that impression) */
		for (int p = 0; p < n_persons; p++)
			for (int imp = 0; imp <= max_imp; imp++)
			{
				search		s = {.person = local[p]};
				bool		any = false;

				if (local[p] >= 0 && imp == first_imp)
					continue;
				for (int i = 0; i < n; i++)
					if (person[i] == p && r[i].imp == imp)
					{
						s.finger[pos[i] - 1] = &r[i].t;
						any = true;
					}
				if (any)
					f->s[f->n_s++] = s;
			}
		free(local);
	}
	free(person);
	free(pos);
	*n_folds = 2;
	return folds;
}

/* ------------------------------------------------------------------ */

static int
int_arg(const char *name, const char *v, int lo, int hi)
{
	char	   *end;
	long		x = strtol(v, &end, 10);

	if (*v == '\0' || *end != '\0' || x < lo || x > hi)
		die("%s: \"%s\" is not an integer in [%d, %d]", name, v, lo, hi);
	return (int) x;
}

static void
parse_args(int argc, char **argv)
{
	mcc_synth_defaults(&opt.sp);
	opt.profile = mcc_profile_by_id(MCC_PROFILE_DEFAULT);
	opt.persons = 2500;
	opt.searches = 2000;
	opt.fingers = 4;
	opt.threads = 2;
	opt.refine_min = 100;
	for (int i = 1; i < argc; i++)
	{
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--synth") == 0)
		{
			opt.synth = true;
			continue;
		}
		if (v == NULL)
			die("%s needs a value (or is unknown)", a);
		i++;
		if (strcmp(a, "--persons") == 0)
			opt.persons = int_arg(a, v, 1, 10000000);
		else if (strcmp(a, "--searches") == 0)
			opt.searches = int_arg(a, v, 2, 10000000);
		else if (strcmp(a, "--fingers") == 0)
			opt.fingers = int_arg(a, v, 1, MAX_FINGERS);
		else if (strcmp(a, "--threads") == 0)
			opt.threads = int_arg(a, v, 1, 64);
		else if (strcmp(a, "--refine-min") == 0)
			opt.refine_min = int_arg(a, v, 0, 1000000);
		else if (strcmp(a, "--ext") == 0)
			opt.ext = v;
		else if (strcmp(a, "--dir") == 0)
		{
			if (opt.n_dir == MAX_DIRS)
				die("at most %d --dir", MAX_DIRS);
			opt.dir[opt.n_dir++] = v;
		}
		else
		{
			int			m = 0;

			while (m < CLI_N_MODEL && (strncmp(a, "--", 2) != 0 ||
									   strcmp(a + 2, cli_model_opts[m].name) != 0))
				m++;
			if (m == CLI_N_MODEL)
				die("unknown option %s", a);
			cli_model_option(CLI_MODEL_BASE + m, v, &opt.sp);
		}
	}
	if (opt.synth == (opt.n_dir > 0))
		die("give --synth or --dir DIR");
	cli_check_model(&opt.sp);
	if (opt.synth && opt.searches / 2 > opt.persons)
		die("--searches / 2 must not exceed --persons");
}

int
main(int argc, char **argv)
{
	fold	   *folds;
	int			n_folds;
	counts		k[N_CONFIGS];
	long		lost = 0;
	double		t0;

	parse_args(argc, argv);
	mcc_lss_init();
	t0 = tclock_wall_s();
	folds = opt.synth ? synth_fold(&n_folds) : dir_folds(&n_folds);
	memset(k, 0, sizeof(k));
	for (int g = 0; g < n_folds; g++)
	{
		run_fold(&folds[g]);
		lost += folds[g].lost;
		for (int c = 0; c < N_CONFIGS; c++)
			count_fold(&folds[g], c, &k[c]);
	}
	printf("gallery rows %d (fold 1), shortlist n' = %d, folds %d, %.1f s\n",
		   folds[0].n_gal, folds[0].n_refine, n_folds, tclock_wall_s() - t0);
	printf("%-14s %7s %9s %14s %15s %8s\n", "probe fingers", "mated", "nonmated",
		   "FNIR@FPIR=0 %", "FNIR@FPIR=1% %", "rank-1 %");
	for (int c = 0; c < N_CONFIGS; c++)
	{
		if (config_fingers[c] > folds[0].n_pos)
			continue;
		printf("%-14d %7ld %9ld %14.2f %15.2f %8.2f\n", config_fingers[c], k[c].mated,
			   k[c].nonmated, 100.0 * k[c].fn0 / k[c].mated, 100.0 * k[c].fn1 / k[c].mated,
			   100.0 * k[c].rank1 / k[c].mated);
	}
	printf("mated searches whose mate no probe finger's shortlist held: %ld\n", lost);
	return 0;
}
