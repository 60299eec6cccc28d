/*
 * gpu_data.h: synthetic galleries and probes for the GPU tests and the GPU
 * benchmark, and the reference LSS written from mcc_lss.h.
 *
 * Two kinds of data: random cylinders (gd_gallery: 255 bits of which a
 * random share, the "coverage", is set with probability 1/2, so popcounts
 * spread like real MCC cylinders; byte angles uniform or "oriented", two
 * clusters 128 apart, the ridge-flow ambiguity of upright prints, giving
 * about 19 gated probe cylinders per gallery cylinder, the paper's 16), and
 * synthetic fingers through src/core (gd_gallery_synth).
 */
#ifndef MCC_GPU_DATA_H
#define MCC_GPU_DATA_H

#include <stdint.h>
#include <stdio.h>

#include "mcc_lss.h"
#include "mcc_soa.h"
#include "mcc_template.h"

typedef struct gd_rng
{
	uint64_t	s;
} gd_rng;

/* splitmix64 */
uint64_t	gd_next(gd_rng *r);
/* uniform in [0, n) */
uint32_t	gd_below(gd_rng *r, uint32_t n);

typedef struct gd_params
{
	int			min_cyl;		/* cylinders per template, uniform */
	int			max_cyl;
	int			oriented;		/* angles in two clusters (else uniform) */
	int			zero_pc;		/* share of empty cylinders, per mille */
	int			edge_cases;		/* templates of 0, 1 and 256 cylinders */
} gd_params;

/* A probe held in memory with a view on it. */
typedef struct gd_probe
{
	uint64_t	bits[MCC_MAX_CYL * 4];
	uint8_t		meta[MCC_MAX_CYL * 4];
	mcc_template_view v;
} gd_probe;

/* Allocate and fill a gallery of n templates (ids are a permutation). */
int			gd_gallery(mcc_soa *g, uint32_t n, const gd_params *gp, uint64_t seed);

/* Append n more templates to a gallery made by gd_gallery. */
int			gd_gallery_more(mcc_soa *g, uint32_t n, const gd_params *gp, uint64_t seed);

/* Free a gallery made by gd_gallery. */
void		gd_gallery_free(mcc_soa *g);

/* A random probe of n cylinders. */
void		gd_probe_random(gd_probe *p, int n, const gd_params *gp, gd_rng *r);

/* A probe made from gallery template k: bit flips, jitter, drops, extras. */
void		gd_probe_mated(gd_probe *p, const mcc_soa *g, uint32_t k, const gd_params *gp,
						   gd_rng *r);

/* Point p->v at its storage (after a copy of the struct). */
void		gd_probe_fix(gd_probe *p);

/* Reference LSS (mcc_lss.h arithmetic, plain loops) of probe v vs template k. */
float		gd_ref_score(const mcc_template_view *v, const mcc_soa *g, uint32_t k);

/* Local similarities computed by the reference (gated pairs) for v vs g. */
double		gd_ref_pairs(const mcc_template_view *v, const mcc_soa *g);

/*
 * A realistic gallery: `unique` templates built by src/core from synthetic
 * fingers (mcc_synth.h, impression 0), repeated in turn up to n templates
 * (g is mcc_soa_init'ed: free it with mcc_soa_free), and nprobes probes
 * from impression 1 of random gallery fingers. Returns 0, or -1.
 */
int			gd_gallery_synth(mcc_soa *g, uint32_t n, uint32_t unique, uint64_t seed,
							 gd_probe *probes, int nprobes);

/* Scores of src/core's CPU scan (mcc_soa_scan) for probes vs g; removed -> -1. */
float	   *gd_core_scores(const gd_probe *pr, int nq, const mcc_soa *g, const uint8_t *removed);

/* The FP64 rcp of the kernels, in C; returns how many den in [1, 2^17] differ. */
long		gd_check_rcp_fp64(void);

/* A view of the first n templates of g (shares g's arrays). */
mcc_soa		gd_prefix(const mcc_soa *g, uint32_t n);

/* The benchmarks' log: gd_say prints to stdout and, when open, to gd_logf. */
extern FILE *gd_logf;
void		gd_say(const char *fmt,...) __attribute__((format(printf, 1, 2)));

#endif							/* MCC_GPU_DATA_H */
