/*
 * eng_gpu_refine.c: a rescoring's stage on the GPU (eng_gpu_refine,
 * kernels/mcc_gpu_refine.h): the gallery's refinement data sent once per
 * mirror, one library call per method, and what a failure means.
 */
#include "eng_gpu.h"

#include <stdlib.h>

#include "eng_cache.h"
#include "eng_log.h"
#include "eng_rescore.h"

#ifdef MCC_ENGINE_GPU

#include "eng_gpu_int.h"
#include "mcc_gpu_refine.h"

bool
eng_gpu_refine_wants(const eng_gpu *g, const eng_cache *c)
{
	const eng_gpu_mirror *m = c ? c->gpu : NULL;

	return eng_gpu_wants(g, c) && m != NULL && !atomic_load(&((eng_gpu_mirror *) m)->ref_failed);
}

bool
eng_gpu_refine_method(int method)
{
	return mcc_gpu_refine_supported(method) != 0;
}

/*
 * Score the pairs of rs's live probes of one method (lock held): one
 * library call, its probes the job's probes of that method.
 */
static mcc_gpu_code
refine_method(eng_gpu *g, eng_gpu_mirror *m, eng_rescore *rs, mcc_method method,
			  mcc_template_view *views, uint32_t *qof, mcc_gpu_pair *pairs, float *scores,
			  mcc_error *err)
{
	size_t		np = 0;
	int			nq = 0;
	mcc_gpu_code rc;
	double		t0;

	for (uint32_t i = 0; i < rs->n_probes; i++)
	{
		const eng_rescore_probe *p = &rs->probes[i];

		if (!p->on_gpu || p->method != method || p->n == 0 ||
			(p->cancel && atomic_load(p->cancel)))
			continue;
		views[nq] = p->probe;
		qof[nq] = i;
		for (uint32_t j = 0; j < p->n; j++)
		{
			uint32_t	e = rs->pairs[p->first + j].entry;

			if (e >= m->ref_given)
			{
				mcc_error_set(err, MCC_ERR_INTERNAL,
							  "entry %u has no refinement data on the GPU (%u templates have)",
							  e, m->ref_given);
				return MCC_GPU_CUDA;	/* reloaded by the next pass */
			}
			pairs[np++] = (mcc_gpu_pair) {(uint32_t) nq, e, MCC_GPU_FROM_GALLERY};
		}
		nq++;
	}
	if (np == 0)
		return MCC_GPU_OK;
	t0 = eng_gpu_now_s();
	rc = mcc_gpu_refine(m->ctx, views, nq, NULL, 0, pairs, np, method, NULL, scores, err);
	g->stats.refine_lib_s += eng_gpu_now_s() - t0;
	if (rc != MCC_GPU_OK)
		return rc;
	{
		mcc_gpu_refine_timing tm;

		mcc_gpu_refine_last_timing(m->ctx, &tm);
		g->stats.lib_ms[ENG_GPU_T_RPREP] += tm.prep_ms;
		g->stats.lib_ms[ENG_GPU_T_RH2D] += tm.h2d_ms;
		g->stats.lib_ms[ENG_GPU_T_RKERNEL] += tm.kernel_ms;
		g->stats.lib_ms[ENG_GPU_T_RD2H] += tm.d2h_ms;
	}
	np = 0;
	for (int q = 0; q < nq; q++)
	{
		const eng_rescore_probe *p = &rs->probes[qof[q]];

		for (uint32_t j = 0; j < p->n; j++)
			rs->pairs[p->first + j].score = scores[np++];
	}
	g->stats.refine_pairs += np;
	return MCC_GPU_OK;
}

/*
 * Every live pair of rs on m's context, one call per method (lock held,
 * released by the library while it waits for the device; m busy meanwhile).
 */
static mcc_gpu_code
refine_all(eng_gpu *g, eng_gpu_mirror *m, eng_rescore *rs, mcc_error *err)
{
	mcc_template_view *views = malloc(sizeof(mcc_template_view) * (rs->n_probes + 1));
	uint32_t   *qof = malloc(sizeof(uint32_t) * (rs->n_probes + 1));
	mcc_gpu_pair *pairs = malloc(sizeof(mcc_gpu_pair) * ((size_t) rs->n_pairs + 1));
	float	   *scores = malloc(sizeof(float) * ((size_t) rs->n_pairs + 1));
	mcc_gpu_code rc = MCC_GPU_OK;

	if (views == NULL || qof == NULL || pairs == NULL || scores == NULL)
	{
		mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
		rc = MCC_GPU_OOM;
	}
	for (int method = 0; method < MCC_NMETHODS && rc == MCC_GPU_OK; method++)
		rc = refine_method(g, m, rs, (mcc_method) method, views, qof, pairs, scores, err);
	free(views);
	free(qof);
	free(pairs);
	free(scores);
	return rc;
}

/*
 * What a failure of the refinement library means (lock held): the process
 * off the GPU for a sticky error; the cache's rescoring on the CPU for good
 * when the device cannot hold or take the gallery's refinement data
 * (attaching), runs no such method, or keeps failing; else this job on the
 * CPU (a CUDA error also drops the copy: the next pass uploads it again).
 * The LSS search of the cache keeps its GPU copy.
 */
static eng_gpu_outcome
refine_outcome(eng_gpu *g, eng_gpu_mirror *m, mcc_gpu_code rc, bool attaching, mcc_error *err)
{
	eng_gpu_outcome out = eng_gpu_outcome_of(rc, false);
	bool		for_good = false;

	/* done, or the process off the GPU, as for a pass */
	if (out == ENG_GPU_DONE || out == ENG_GPU_PROCESS_CPU)
		return out;
	switch (rc)
	{
		case MCC_GPU_UNSUPPORTED:
			for_good = true;
			break;
		case MCC_GPU_OOM:
		case MCC_GPU_INVALID:
			/* the gallery's data stays; a job's probes or size are its own */
			for_good = attaching || ++m->ref_failures >= GPU_MAX_FAILURES;
			break;
		case MCC_GPU_CUDA:
		default:
			eng_gpu_close_ctx(g, m);
			for_good = ++m->ref_failures >= GPU_MAX_FAILURES;
			break;
	}
	if (for_good)
	{
		atomic_store(&m->ref_failed, true);
		mcc_error_detail(err, "Refinement of this cache stays on the CPU threads.");
	}
	return ENG_GPU_RETRY_CPU;
}

eng_gpu_outcome
eng_gpu_refine(eng_gpu *g, eng_rescore *rs, mcc_error *err)
{
	const eng_cache *c = rs->cache;
	eng_gpu_mirror *m = c->gpu;
	eng_gpu_outcome out;
	mcc_gpu_code rc;
	double		t_in = eng_gpu_now_s();

	pthread_mutex_lock(&g->lock);
	if ((out = eng_gpu_job_blocked(g, m, true, err)) != ENG_GPU_DONE)
		goto failed;
	/* a test's failure stands for one of the refinement data */
	if ((rc = eng_gpu_take_injected(&g->inject_refine, "refinement ", err)) != MCC_GPU_OK)
	{
		out = refine_outcome(g, m, rc, true, err);
		goto failed;
	}
	/* the pass synced the mirror unless it ran on the CPU */
	if ((out = eng_gpu_sync_for_job(g, m, c, &rc, err)) != ENG_GPU_DONE)
		goto failed;
	if ((rc = eng_gpu_attach_refinement(g, m, c, err)) != MCC_GPU_OK)
	{
		out = refine_outcome(g, m, rc, true, err);
		goto failed;
	}
	eng_gpu_busy(g, m, true);
	rc = refine_all(g, m, rs, err);
	eng_gpu_busy(g, m, false);
	if (rc != MCC_GPU_OK)
	{
		out = refine_outcome(g, m, rc, false, err);
		goto failed;
	}
	eng_gpu_update_bytes(g, m);
	m->ref_failures = 0;
	g->stats.refines++;
	g->stats.refine_s += eng_gpu_now_s() - t_in;
	pthread_mutex_unlock(&g->lock);
	return ENG_GPU_DONE;

failed:
	if (out == ENG_GPU_PROCESS_CPU)
		atomic_store(&g->broken, true);
	g->stats.refine_fallbacks++;
	pthread_mutex_unlock(&g->lock);
	return out;
}

#else							/* !MCC_ENGINE_GPU */

bool
eng_gpu_refine_wants(const eng_gpu *g, const eng_cache *c)
{
	return false;
}

bool
eng_gpu_refine_method(int method)
{
	return false;
}

eng_gpu_outcome
eng_gpu_refine(eng_gpu *g, eng_rescore *rs, mcc_error *err)
{
	mcc_error_set(err, MCC_ERR_INTERNAL, "built without GPU support");
	return ENG_GPU_PROCESS_CPU;
}

#endif							/* MCC_ENGINE_GPU */
