/*
 * service_load_progress.c: a load's progress as its gallery's slot
 * (mcc_gallery_status) and, for an interactive mcc_gallery_preload(),
 * NOTICEs every mcc.progress_interval report it. Split from service_load.c.
 */
#include "mcc_pg.h"
#include "service.h"
#include "service_load.h"

#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

/* Heap blocks the load has read (a synchronized scan may start mid-table). */
static uint64
blocks_done(const load_progress *p)
{
	uint64		d = p->blocks_before;
	HeapScanDesc h = p->scan;

	if (h != NULL && h->rs_nblocks > 0 && BlockNumberIsValid(h->rs_cblock))
		d += ((uint64) h->rs_cblock + h->rs_nblocks - h->rs_startblock) % h->rs_nblocks + 1;
	return Min(d, p->blocks_total);
}

/*
 * Estimates of a load in progress: its total rows, its rate (rows per
 * second) and the seconds left, each -1 when unknown. The fraction done is
 * that of the heap blocks read; the total is the planner's estimate, or
 * extrapolated from the blocks when there is none, and exact once every
 * block is read.
 */
void
mcc_load_estimate(uint64 rows, uint64 rows_expected, uint64 blocks, uint64 blocks_total,
				  double elapsed, double *total, double *rate, double *left)
{
	double		fraction = blocks_total > 0 ? (double) blocks / blocks_total :
		rows_expected > 0 ? Min(1.0, (double) rows / rows_expected) : -1;

	*rate = elapsed > 0 ? rows / elapsed : -1;
	if (fraction >= 1.0)
		*total = (double) rows;
	else if (rows_expected > 0)
		*total = (double) Max(rows_expected, rows);
	else
		*total = fraction > 0 ? rows / fraction : -1;
	*left = fraction >= 1.0 ? 0 : fraction > 0 ? elapsed * (1 - fraction) / fraction : -1;
}

/* The load's progress in its slot; done: the load is over. */
void
mcc_load_slot_progress(const load_state *st, bool done)
{
	const mcc_gallery_ref *g = st->g;
	mcc_svc_gallery *s = &mcc_svc->slots[g->slot];

	if (!mcc_slot_lock(g->slot, g->relid, g->epoch, LW_EXCLUSIVE))
		return;
	if (done)
	{
		if (s->load_pid == MyProcPid)
			s->load_pid = 0;
	}
	else
	{
		s->load_pid = MyProcPid;
		s->load_started = st->prog.started;
		s->load_rows = st->rows_sent;
		s->load_rows_expected = st->prog.rows_expected;
		s->load_blocks = blocks_done(&st->prog);
		s->load_blocks_total = st->prog.blocks_total;
	}
	LWLockRelease(MCC_SLOT_LOCK(g->slot));
}

/* A FATAL exit in the middle of a load must not leave it marked in progress. */
void
mcc_load_forget_own(int code, Datum arg)
{
	int			i;

	if (mcc_svc == NULL)
		return;
	/* a plain store of our own pid's mark: no lock needed, none may be held */
	for (i = 0; i < mcc_svc->n_slots; i++)
		if (mcc_svc->slots[i].load_pid == MyProcPid)
			mcc_svc->slots[i].load_pid = 0;
}

/* "2 min 46 s" */
static char *
duration_text(double secs)
{
	if (secs < 90)
		return psprintf("%.0f s", secs);
	if (secs < 5400)
		return psprintf("%d min %d s", (int) (secs / 60), (int) secs % 60);
	return psprintf("%d h %d min", (int) (secs / 3600), ((int) secs % 3600) / 60);
}

/* Publish the progress; a NOTICE every mcc.progress_interval when asked for. */
void
mcc_load_progress_report(load_state *st)
{
	TimestampTz now = GetCurrentTimestamp();
	double		elapsed = (double) (now - st->prog.started) / USECS_PER_SEC;
	double		total;
	double		rate;
	double		left;
	uint64		blocks = blocks_done(&st->prog);

	mcc_load_slot_progress(st, false);
	if (!st->prog.notices || mcc_progress_interval < 0 ||
		!TimestampDifferenceExceeds(st->prog.last_notice, now, mcc_progress_interval))
		return;
	st->prog.last_notice = now;
	st->prog.noticed = true;
	mcc_load_estimate(st->rows_sent, st->prog.rows_expected, blocks, st->prog.blocks_total,
					  elapsed, &total, &rate, &left);
	ereport(NOTICE,
			(errmsg("gallery \"%s\": " UINT64_FORMAT " of about %.0f rows loaded (%d%%), %.0f rows/s, about %s left",
					get_rel_name(st->g->relid), st->rows_sent, Max(total, 0),
					st->prog.blocks_total > 0 ? (int) (100 * blocks / st->prog.blocks_total) : 0,
					Max(rate, 0), left >= 0 ? duration_text(left) : "an unknown time")));
}

