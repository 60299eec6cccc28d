/*
 * mcc_soa.h: a gallery of templates in the structure-of-arrays layout of
 * paper 000 (Table II, Fig. 10), and the CPU scan over it.
 *
 * Cylinder j of the gallery has its words in bits[w * cap_cyl + j] for
 * w = 0..words-1 (one array per 64-bit word, so that consecutive cylinders
 * are consecutive in memory), its byte angle in angle[j] and its popcount
 * in pc[j]. Cylinders are grouped by template and sorted by angle within a
 * template (Sec. 4.6), so a cylinder's template (paper 000's k_j) is the k
 * with first[k] <= j < first[k + 1]: no scan, CPU or GPU, reads it per
 * cylinder, and it is not stored (4 bytes a cylinder that every load and
 * snapshot restore wrote and nothing read). Per template:
 * first[k] (its first cylinder; first[n_tpl] = n_cyl), ncyl[k] (LUT_C) and
 * the caller's key id[k]. The GPU upload (issue 4) applies the warp mapping
 * of eq. 3 to this order.
 */
#ifndef MCC_SOA_H
#define MCC_SOA_H

#include <stdint.h>

#include "mcc_error.h"
#include "mcc_lss.h"
#include "mcc_profile.h"
#include "mcc_template.h"

typedef struct mcc_soa
{
	const mcc_profile *profile;
	int			words;			/* uint64 words per cylinder */
	uint32_t	n_tpl;
	uint32_t	n_cyl;
	uint32_t	cap_tpl;
	uint32_t	cap_cyl;
	uint64_t   *bits;			/* words * cap_cyl */
	uint8_t    *angle;			/* cap_cyl */
	uint16_t   *pc;				/* cap_cyl */
	uint32_t   *first;			/* cap_tpl + 1 */
	uint16_t   *ncyl;			/* cap_tpl */
	int64_t    *id;				/* cap_tpl */
} mcc_soa;

/* Empty gallery for profile p with initial capacities (malloc'ed). */
mcc_status	mcc_soa_init(mcc_soa *g, const mcc_profile *p, uint32_t cap_tpl,
						 uint32_t cap_cyl, mcc_error *err);

/* Release the arrays. */
void		mcc_soa_free(mcc_soa *g);

/* Forget all templates, keep the capacity. */
void		mcc_soa_clear(mcc_soa *g);

/* Append a template (same profile as the gallery), growing as needed. */
mcc_status	mcc_soa_append(mcc_soa *g, const mcc_template_view *t, int64_t id,
						   mcc_error *err);

/*
 * Write t (the gallery's profile) as template k with its cylinders at
 * base.. (room there: k < cap_tpl, base + t->n_cyl <= cap_cyl): cylinders,
 * first[k], ncyl[k], id[k]. n_tpl, n_cyl and first[n_tpl] are left to the
 * caller, so that threads can write several templates at places computed
 * beforehand (the matcher engine's bulk load); mcc_soa_append uses it.
 */
void		mcc_soa_put(mcc_soa *g, uint32_t k, uint32_t base, const mcc_template_view *t,
						int64_t id);

/*
 * LSS scores of probe q against templates [t0, t1) of g into
 * scores[0 .. t1-t0). Pure function of its inputs; safe to call from several
 * threads on disjoint ranges.
 */
void		mcc_soa_scan(const mcc_probe *q, const mcc_soa *g, uint32_t t0,
						 uint32_t t1, float *scores);

/*
 * LSS score of probe q against the one template t, read in place from its
 * blob (no copy into a gallery): the score mcc_soa_scan gives t in any
 * gallery, with the same kernel. t must have passed mcc_template_open or
 * mcc_template_open_stored (the kernels take a row of the probe's tables by
 * each cylinder's popcount). 0 for a template of another profile.
 */
float		mcc_soa_score_view(const mcc_probe *q, const mcc_template_view *t);

/* Name of the CPU kernel chosen at run time ("avx512", "avx2", "popcnt", "generic"). */
const char *mcc_soa_kernel_name(void);

/*
 * Test and benchmark hook: force the scan kernel by name ("avx512",
 * "avx2", "popcnt", "generic"), or NULL to go back to the automatic choice. Returns
 * 0, or -1 if the name is unknown or this CPU cannot run that kernel. It
 * switches every later scan of the process; not for production code.
 * Every kernel computes the same scores; profiles with validity masks run
 * the scalar vote loop in every kernel (with POPCNT where available).
 */
int			mcc_soa_set_kernel(const char *name);

#endif							/* MCC_SOA_H */
