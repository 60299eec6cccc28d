/*
 * mcc_job_shares.h: how work on a list is cut into shares for
 * mcc_job_run_each (mcc_job.h). Apart from mcc_job.h, which is C11 (its
 * atomics), so that the CUDA libraries' host code (C++) cuts its lists by
 * the same rule.
 */
#ifndef MCC_JOB_SHARES_H
#define MCC_JOB_SHARES_H

#include <stddef.h>

#ifdef __cplusplus
extern "C"
{
#endif

/*
 * How many shares to cut n items into for mcc_job_run_each: one per
 * per_share items (one at least), at most max and the online CPUs.
 */
int			mcc_job_shares(size_t n, size_t per_share, int max);

/*
 * The shares of one long list's host work (a refining search's shortlist:
 * the partitions' merge, the hits to the cache's slots, the cut's count,
 * the rescoring's preparation; 400,000 entries a probe at 100 M rows): at
 * least MCC_JOB_LIST_SHARE_MIN entries a share (fewer make one share, on
 * the calling thread), at most MCC_JOB_LIST_SHARES_MAX threads and the
 * online CPUs. Each stage took 3-6 ms of a one-client call with 12 threads
 * on a 64-CPU host; a short list (4,000 at 1 M rows) stays on one thread.
 */
#define MCC_JOB_LIST_SHARE_MIN	8192
#define MCC_JOB_LIST_SHARES_MAX	32

/* mcc_job_shares for a long list of n entries (MCC_JOB_LIST_SHARE_MIN, _MAX). */
static inline int
mcc_job_list_shares(size_t n)
{
	return mcc_job_shares(n, MCC_JOB_LIST_SHARE_MIN, MCC_JOB_LIST_SHARES_MAX);
}

#ifdef __cplusplus
}
#endif

#endif							/* MCC_JOB_SHARES_H */
