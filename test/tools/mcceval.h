/*
 * mcceval.h: what the files of mcceval share: the records of a data set,
 * the options, the error-rate metrics and DET plots (mcceval.c), the FVC
 * verification protocols (mcceval_fvc.c) and the identification protocol
 * (mcceval_ident.c).
 */
#ifndef MCCEVAL_H
#define MCCEVAL_H

#include <ctype.h>
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
#include <unistd.h>

#include "mcc_iso.h"
#include "mcc_job.h"
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

extern options opt;
extern FILE *tsv_file;		/* --tsv, opened by main */

/* A score with its class (1 genuine / mated, 0 impostor / non-mated). */
typedef struct labelled
{
	double		s;
	int			gen;
} labelled;

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

/* Print a message and exit with status 2. */
void		die(const char *fmt,...) __attribute__((format(printf, 1, 2), noreturn));

/* malloc or die. */
void	   *xmalloc(size_t n);

/* Error rates of a list of scores (l is sorted), into m. */
void		compute_metrics(labelled *l, int n, metrics *m);

/* Write DET data blocks and a gnuplot script for curves[0..n). */
void		write_det(const char *prefix, const char *title, const char *xlabel,
					  const char *ylabel, metrics *curves, const char *const *names, int n);

/* The name of method m in tables and plots (MCC_NMETHODS: the baseline's). */
const char *method_label(int m);

/* The FVC verification protocols on records r[0..n) (mcceval_fvc.c). */
void		run_fvc(record *r, int n);

/* The identification protocol (paper 000 Sec. 5.4) on gallery g and probes p (mcceval_ident.c). */
void		run_ident(record *g, int ng, record *p, int np, const int64_t *mate);

#endif							/* MCCEVAL_H */
