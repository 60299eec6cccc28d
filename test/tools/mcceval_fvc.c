/*
 * mcceval_fvc.c: mcceval fvc, the FVC verification protocols (the usage
 * is at the top of mcceval.c): every genuine and impostor pair scored by
 * every method on the threads, the FVC subset, EER and FMR100/1000/zero,
 * with a baseline matcher's scores when given.
 */
#include "mcceval.h"

typedef struct pair_job
{
	record	   *r;
	int			n_pairs;
	int		   *pa;
	int		   *pb;
	float	   *score;			/* n_pairs x MCC_NMETHODS */
	atomic_int	next;			/* the first of the next 16 pairs */
	pthread_mutex_t lock;		/* the timings' sums */
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
	int			i;

	mcc_match_work_init(w);
	while ((i = mcc_job_claim(&job->next, 16, job->n_pairs)) >= 0)
	{
		mcc_error	err;
		float		s;
		double		t0;

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
void
run_fvc(record *r, int n)
{
	int			n_pairs = n * (n - 1) / 2;
	int		   *pa = xmalloc(sizeof(int) * n_pairs);
	int		   *pb = xmalloc(sizeof(int) * n_pairs);
	pair_job	job = {0};
	double	   *base = NULL;
	int			k = 0;
	int			first_imp = r[0].imp;
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
	mcc_job_run_shared(opt.threads, pair_worker, &job);
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
