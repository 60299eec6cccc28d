/*
 * mcceval_ident.c: mcceval ident, the identification protocol (paper 000
 * Sec. 5.4; the usage is at the top of mcceval.c): each probe's LSS
 * shortlist over the gallery (CPU scan, or the GPU with --gpu), rescored
 * by every method (on the GPU too with --gpu-refine), then FNIR at FPIR
 * 0 and 1 %, rank-1 rate, identification EER and the mates' LSS recall.
 */
#include "mcceval.h"
#include "../unit/testsort.h"

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
	atomic_int	next;			/* the next probe */
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
	int			i;

	if (q == NULL)
		die("out of memory");
	mcc_match_work_init(w);
	while ((i = mcc_job_claim(&job->next, 1, job->n_prb)) >= 0)
	{
		mcc_topk	tk;
		double		t0;
		mcc_error	err;

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
	qsort(nm, n_nm, sizeof(double), tsort_double_desc);
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
void
run_ident(record *g, int ng, record *p, int np, const int64_t *mate)
{
	ident_job	job = {0};
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
	mcc_job_run_shared(opt.threads, ident_worker, &job);
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
