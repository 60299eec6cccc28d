/*
 * mcc_match_int.h: the inside of mcc_match_work and the functions shared by
 * mcc_match.c, mcc_relax.c and mcc_consolidate.c. Private to src/core.
 *
 * Geometry is kept in the counter-clockwise frame of the angles: a minutia
 * at image (x, y) is the point (x, -y), and its direction theta the unit
 * vector (cos theta, sin theta), so rotations are complex products and no
 * step needs atan2 (mcc_relax.c says how the angle terms are computed).
 */
#ifndef MCC_MATCH_INT_H
#define MCC_MATCH_INT_H

#include <stdint.h>

#include "mcc_lss.h"
#include "mcc_match.h"

#define MCC_HIST_SLOTS	(MCC_W + 16)

/*
 * One side of a comparison: its cylinders and their minutiae, in the order
 * of the minutiae (not the stored order, which depends on the angles): every
 * index-based tie-break then gives the same answer for a template and a
 * rotated copy of it.
 */
typedef struct match_side
{
	int			n;				/* cylinders */
	uint8_t		mi[MCC_MAX_CYL];	/* minutia index of each */
	uint16_t	pc[MCC_MAX_CYL];	/* popcount of the value bits */
	uint8_t		angle[MCC_MAX_CYL];	/* byte angle */
	double		px[MCC_MAX_CYL];	/* position, counter-clockwise frame */
	double		py[MCC_MAX_CYL];
	double		ux[MCC_MAX_CYL];	/* direction, unit vector */
	double		uy[MCC_MAX_CYL];
	uint64_t	bits[MCC_MAX_CYL][2 * MCC_MAX_WORDS];	/* value, then mask words */
} match_side;

/* A candidate pair of the global stage. */
typedef struct match_pair
{
	uint8_t		r;				/* cylinder of A */
	uint8_t		c;				/* cylinder of B */
	double		lambda0;		/* Gamma[r][c] */
} match_pair;

struct mcc_match_work
{
	int			magic;			/* MCC_MATCH_MAGIC once initialised */
	const mcc_profile *profile;
	int			have_probe;
	int			have_matrix;
	int			have_votes;		/* hist holds LSS votes (template path) */
	int			np;				/* n_P of this comparison */
	match_side	a;
	match_side	b;
	float		gamma[MCC_MAX_CYL * MCC_MAX_CYL];	/* row-major n_a x n_b */
	uint32_t	hist[MCC_HIST_SLOTS];
	/* scratch of the global stage */
	union
	{
		uint64_t	keys[MCC_MAX_CYL * MCC_MAX_CYL];	/* ranked entries */
		int64_t		weight[MCC_MAX_CYL * MCC_MAX_CYL];	/* LSA weights */
	};
	match_pair	pairs[MCC_MAX_CYL];
	int			npairs;
	union
	{
		double		rho[MCC_MAX_CYL * MCC_MAX_CYL];	/* compatibilities */
		uint64_t	sorted[MCC_MAX_CYL * MCC_MAX_CYL];	/* radix sort output */
	};
	double		lam[2][MCC_MAX_CYL];
	int64_t		assign_work[8 * (MCC_MAX_CYL + 1)];
	int			col_of_row[MCC_MAX_CYL];
	/* what the last score used (mcc_match_last_pairs) */
	int			n_last;
	uint8_t		last_r[MCC_MAX_CYL];
	uint8_t		last_c[MCC_MAX_CYL];
	double		last_v[MCC_MAX_CYL];
};

#define MCC_MATCH_MAGIC 0x4d434357	/* "MCCW" */

/*
 * Relaxation of w->pairs[0 .. w->npairs) with constants rp and tables tab;
 * the score averages the np pairs of best efficiency.
 */
double		mcc_relax_score(mcc_match_work *w, const mcc_relax_params *rp,
							const mcc_sigmoid_tab *tab, int np);

/* Consolidation of paper 001 on the current matrix. */
double		mcc_consolidate(mcc_match_work *w, const mcc_cons_params *cp);

/* LSS of the current comparison: votes if any, else the float mean. */
double		mcc_match_lss(mcc_match_work *w);

/* Record the pairs a score used. */
void		mcc_match_note(mcc_match_work *w, int i, int r, int c, double v);

#endif							/* MCC_MATCH_INT_H */
