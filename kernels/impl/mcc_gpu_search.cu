/*
 * mcc_gpu_search.cu: probe images, device passes, results and their merge.
 *
 * A search builds, per chunk of probes, one image (mcc_gpu_int.h) that
 * every block copies into shared memory: the LUTs, and for each probe its
 * cylinders sorted by angle and stored three times over, the prefix counts
 * cnt[a] that turn LUT_theta into index ranges, eta per entry and, for the
 * table variants, rcp(eta_i + eta[pc]) for every gallery popcount. Each
 * partition then runs the match kernel and the selection on its own stream;
 * the host waits once per chunk and merges the partitions' candidates.
 */
#include <stdlib.h>
#include <string.h>

#include "mcc_gpu_rt.h"
#include "mcc_gpu_int.h"
#include "mcc_gpu_ties.h"
#include "mcc_lss.h"

#define A16(x) (((x) + 15) & ~(size_t) 15)

/* Image bytes of one probe (lean: with the column words of tc-lean). */
static size_t
probe_bytes(int n, int rcp, int lean)
{
	size_t		b = sizeof(mcc_pdesc) + A16(2 * 257) + 2 * 48 * (size_t) n +
		A16(24 * (size_t) n) + A16(12 * (size_t) n);

	if (rcp != MCC_RCP_FP64)
		b += 4 * (size_t) MCC_GPU_TROW * n;
	if (rcp != MCC_RCP_FP64 && lean)
		b += A16(24 * (size_t) n);
	return b;
}

/* The variant's kernel has the lean epilogue (tc-lean: its column words). */
static int
lean_of(int tc)
{
	return tc == 5 || tc == 6;
}

/* Check a probe against the context. */
static mcc_gpu_code
check_probe(mcc_gpu *g, const mcc_template_view *v, int q, mcc_error *err)
{
	if (!v->profile || v->profile->id != g->profile->id)
		return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "probe %d has another profile than the gallery", q);
	if (v->n_cyl < 0 || v->n_cyl > MCC_MAX_CYL || (v->n_cyl > 0 && v->words != 4))
		return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "probe %d has an invalid cylinder layout", q);
	for (int c = 0; c < v->n_cyl; c++)
	{
		uint16_t	pc;
		uint64_t	w3;

		uint64_t	w[4];
		int			bits = 0;

		memcpy(&pc, v->meta + 4 * c, 2);
		memcpy(w, v->bits + (size_t) c * 32, 32);
		w3 = w[3];
		if (pc > 255 || (w3 >> 63))
			return mcc_gpu_rt_err(err, MCC_GPU_INVALID,
							   "probe %d: cylinder %d has bits beyond the profile's 255", q, c);
		for (int i = 0; i < 4; i++)
			bits += __builtin_popcountll(w[i]);
		if (bits != pc)
			return mcc_gpu_rt_err(err, MCC_GPU_INVALID,
							   "probe %d: cylinder %d popcount %u does not match its bits", q, c, pc);
	}
	return MCC_GPU_OK;
}

/*
 * Write the image of probes[0..nq) into out (size from probe_bytes); sets
 * *zero if a probe has an empty cylinder and adds the gated pairs per
 * gallery angle to gate[256].
 */
static size_t
build_image(mcc_gpu *g, const mcc_template_view *probes, int nq, int rcp, int lean,
			uint8_t *out, int *zero, double *gate)
{
	size_t		off = A16(MCC_BLOB_PDESC + sizeof(mcc_pdesc) * nq);
	uint16_t   *sq = (uint16_t *) (out + MCC_BLOB_SQRT);
	double	   *E = (double *) (out + MCC_BLOB_E);
	int			dt = g->profile->delta_theta;

	*zero = 0;
	for (int i = 0; i < MCC_GPU_LUT; i++)
	{
		sq[i] = (uint16_t) g->sqrt_fx[i];	/* <= 65408 for popcounts <= 255 */
		E[i] = (double) g->sqrt_fx[i];
		out[MCC_BLOB_LUTP + i] = g->lutp[i];
	}
	for (int q = 0; q < nq; q++)
	{
		const mcc_template_view *v = &probes[q];
		mcc_pdesc  *pd = (mcc_pdesc *) (out + MCC_BLOB_PDESC) + q;
		int			n = v->n_cyl;
		uint16_t   *cnt;
		uint4	   *lo, *hi;
		double	   *e;
		uint32_t   *row;
		uint32_t   *tab = NULL;
		uint2	   *col = NULL;
		int			order[MCC_MAX_CYL];
		int			hist[257];

		memset(pd, 0, sizeof(*pd));
		pd->n = n;
		pd->cnt_off = (uint32_t) off;
		cnt = (uint16_t *) (out + off);
		off += A16(2 * 257);
		pd->lo_off = (uint32_t) off;
		lo = (uint4 *) (out + off);
		off += 48 * (size_t) n;
		pd->hi_off = (uint32_t) off;
		hi = (uint4 *) (out + off);
		off += 48 * (size_t) n;
		pd->e_off = (uint32_t) off;
		e = (double *) (out + off);
		off += A16(24 * (size_t) n);
		pd->row_off = (uint32_t) off;
		row = (uint32_t *) (out + off);
		off += A16(12 * (size_t) n);
		if (rcp != MCC_RCP_FP64)
		{
			tab = (uint32_t *) (out + off);
			off += 4 * (size_t) MCC_GPU_TROW * n;
		}
		if (tab && lean)
		{
			pd->col_off = (uint32_t) off;
			col = (uint2 *) (out + off);
			off += A16(24 * (size_t) n);
		}

		/* sort by angle (stable), prefix counts */
		memset(hist, 0, sizeof(hist));
		for (int c = 0; c < n; c++)
			hist[v->meta[4 * c + 2] + 1]++;
		for (int a = 0; a < 256; a++)
			hist[a + 1] += hist[a];
		for (int a = 0; a <= 256; a++)
			cnt[a] = (uint16_t) hist[a];
		for (int c = 0; c < n; c++)
			order[hist[v->meta[4 * c + 2]]++] = c;

		for (int i = 0; i < n; i++)
		{
			int			c = order[i];
			uint64_t	w[4];
			uint16_t	pc;
			uint32_t	r;

			memcpy(w, v->bits + (size_t) c * 32, 32);
			memcpy(&pc, v->meta + 4 * c, 2);
			if (pc == 0)
				*zero = 1;
			if (tab)
			{
				memcpy(tab + (size_t) i * MCC_GPU_TROW, g->rcp_tab + (size_t) pc * MCC_GPU_TROW,
					   4 * MCC_GPU_TROW);
				r = (uint32_t) (((uint8_t *) (tab + (size_t) i * MCC_GPU_TROW) - out) / 4);
			}
			else
				r = 0;
			/* rcp row (words, < 2^16: the image fits shared memory), popcount, empty flag */
			r |= (uint32_t) pc << 16 | (uint32_t) (pc == 0) << 31;
			for (int m = 0; m < 3; m++)
			{
				int			en = i + m * n;

				lo[en] = make_uint4((uint32_t) w[0], (uint32_t) (w[0] >> 32), (uint32_t) w[1], (uint32_t) (w[1] >> 32));
				hi[en] = make_uint4((uint32_t) w[2], (uint32_t) (w[2] >> 32), (uint32_t) w[3], (uint32_t) (w[3] >> 32));
				e[en] = (double) g->sqrt_fx[pc];
				row[en] = r;
				if (col)
					col[en] = make_uint2((r & 0xffff) * 4, 2 * (uint32_t) pc);
			}
			/* pairs that pass the gate, per gallery angle */
			for (int a = 0; gate && a < 256; a++)
				if (mcc_lss_gate(v->meta[4 * c + 2], a, dt))
					gate[a] += 1;
		}
	}
	return A16(off);
}

/* Make sure partition p can run nq probes over its templates. */
static mcc_gpu_code
ensure_scratch(mcc_gpu *g, mcc_gpu_part *p, int nq, int k, size_t blob, mcc_error *err)
{
	uint32_t	tpl = p->n_tiles * MCC_GPU_TILE;
	int			q = nq > p->sc_q ? (nq > g->opt.max_batch ? nq : g->opt.max_batch) : p->sc_q;
	size_t		keys = (size_t) q * (k + MCC_GPU_MARGIN);
	cudaError_t e;

	if (tpl < 1024)
		tpl = 1024;
	if (cudaSetDevice(p->dev) != cudaSuccess)
		return mcc_gpu_fail(g, cudaGetLastError(), "device selection", p->dev, err);
	if (tpl > p->sc_tpl || q > p->sc_q)
	{
		size_t		cub = 0;
		size_t		need;

		if (tpl > p->sc_tpl)
			tpl += tpl / 4;
		else
			tpl = p->sc_tpl;
		if ((e = mcc_gpu_select_tmp_bytes(q, tpl, &cub)) != cudaSuccess)
			return mcc_gpu_fail(g, e, "selection setup", p->dev, err);
		need = (size_t) q * tpl * (4 + 8 + 8) + (size_t) q * MCC_GPU_SC_BINS * 8 +
			(16 + 10 * (size_t) q) * 4 + cub;
		mcc_gpu_part_free_select(p);
		p->scratch_bytes = p->blob_cap + p->hits_cap;
		if (need > mcc_gpu_room(g, p))
			return mcc_gpu_rt_err(err, MCC_GPU_OOM,
							   "out of GPU memory: search buffers need %zu bytes on GPU %d, %zu are available",
							   need, p->dev, mcc_gpu_room(g, p));
		if ((e = cudaMalloc(&p->scores, (size_t) q * tpl * 4)) != cudaSuccess ||
			(e = cudaMalloc(&p->cand, (size_t) q * tpl * 8)) != cudaSuccess ||
			(e = cudaMalloc(&p->sorted, (size_t) q * tpl * 8)) != cudaSuccess ||
			(e = cudaMalloc(&p->schist, (size_t) q * MCC_GPU_SC_BINS * 8)) != cudaSuccess ||
			(e = cudaMalloc(&p->small, (16 + 10 * (size_t) q) * 4)) != cudaSuccess ||
			(e = cudaMalloc(&p->cub_tmp, cub ? cub : 16)) != cudaSuccess ||
			(e = cudaMallocHost(&p->h_small, (16 + 10 * (size_t) q) * 4)) != cudaSuccess)
			return mcc_gpu_fail(g, e, "search buffer allocation", p->dev, err);
		p->cub_bytes = cub;
		p->sc_q = q;
		p->sc_tpl = tpl;
		p->scratch_bytes += need;
	}
	if (blob > p->blob_cap)
	{
		cudaFree(p->blob);
		p->scratch_bytes -= p->blob_cap;
		p->blob_cap = 0;
		if ((e = cudaMalloc(&p->blob, A16(blob) * 2)) != cudaSuccess)
			return mcc_gpu_fail(g, e, "probe buffer allocation", p->dev, err);
		p->blob_cap = A16(blob) * 2;
		p->scratch_bytes += p->blob_cap;
	}
	if (keys * sizeof(mcc_gpu_hit) > p->hits_cap)
	{
		cudaFree(p->d_hits);
		cudaFreeHost(p->h_hits);
		p->scratch_bytes -= p->hits_cap;
		p->d_hits = p->h_hits = NULL;
		p->hits_cap = 0;
		if ((e = cudaMalloc(&p->d_hits, keys * sizeof(mcc_gpu_hit))) != cudaSuccess ||
			(e = cudaMallocHost(&p->h_hits, keys * sizeof(mcc_gpu_hit))) != cudaSuccess)
			return mcc_gpu_fail(g, e, "result buffer allocation", p->dev, err);
		p->hits_cap = keys * sizeof(mcc_gpu_hit);
		p->scratch_bytes += p->hits_cap;
	}
	return MCC_GPU_OK;
}

/* Wait for every partition after a failure, so no work is left in flight. */
void
mcc_gpu_drain(mcc_gpu *g)
{
	for (int i = 0; i < g->nparts; i++)
		if (cudaSetDevice(g->part[i].dev) == cudaSuccess)
		{
			cudaStreamSynchronize(g->part[i].st);
			if (g->part[i].rf_main)
				cudaStreamSynchronize(g->part[i].rf_main);
			for (int k = 0; k < MCC_GPU_RF_CLASSES; k++)
				if (g->part[i].rf_st[k])
					cudaStreamSynchronize(g->part[i].rf_st[k]);
		}
	(void) cudaGetLastError();
}

/*
 * Candidates per probe kept by the selection on the fast path: k + 4096,
 * and for a refining search's shortlist (k >= MCC_GPU_ORDER_MIN) room for
 * every template. Exact ties at the k-th score past that room send the
 * partition's selection again with room for all (collect_part), one
 * partition after another with a wait each; a shortlist of 400,000 over
 * 25,000,000 templates of quantized LSS scores had such runs at every
 * query (about 20 ms of a 100 M query on four GPUs). The buffers have the
 * room anyway (ensure_scratch), and the sort's work follows the candidates
 * found, not the room.
 */
static uint32_t
cand_cap(const mcc_gpu_part *p, int k)
{
	uint64_t	c = (uint64_t) k + 4096;

	if (k >= MCC_GPU_ORDER_MIN)
		return p->sc_tpl;
	return c < p->sc_tpl ? (uint32_t) c : p->sc_tpl;
}

/* Queue the selection of partition p and the copy of its results. */
static cudaError_t
queue_select(mcc_gpu_part *p, int nq, int k, uint32_t ccap, bool floored, bool timed)
{
	cudaError_t e;
	uint32_t	width = (uint32_t) k + MCC_GPU_MARGIN;

	if (width > ccap)
		width = ccap;
	if ((e = mcc_gpu_select_launch(p, nq, k, p->n_tpl, ccap, floored, timed ? p->ev[5] : NULL)) != cudaSuccess)
		return e;
	if (timed && (e = cudaEventRecord(p->ev[3], p->st)) != cudaSuccess)
		return e;
	if ((e = mcc_gpu_hits_launch(p, nq, ccap, width)) != cudaSuccess ||
		(e = cudaMemcpyAsync(p->h_hits, p->d_hits, (size_t) nq * width * sizeof(mcc_gpu_hit),
							 cudaMemcpyDeviceToHost, p->st)) != cudaSuccess)
		return e;
	/* outlen[] and ovf[] */
	return cudaMemcpyAsync(p->h_small, p->small + 1 + 4 * nq, 8 * (size_t) nq,
						   cudaMemcpyDeviceToHost, p->st);
}

/* A CUDA call of one partition's pass; a failure returns its code (the caller drains). */
#define CK(call, what) \
	do { if ((e = (call)) != cudaSuccess) return mcc_gpu_fail(g, e, what, p->dev, err); } while (0)

/* The probe image of a pass and the kernel it runs. */
typedef struct chunk_plan
{
	size_t		blob;			/* probe image bytes */
	int			zero;			/* a probe has an empty cylinder */
	int			rcp,
				csa,
				cpl,
				bt,
				tc;				/* kernel parameters (mcc_gpu_variant_params) */
	double		gate[256];		/* pairs per gallery cylinder angle, for timing.pairs */
	const float *floors;		/* the pass's min_score per probe, or NULL */
} chunk_plan;

/*
 * The float bits of a floor for the selection: 0 (none) unless positive;
 * at most 2.0f, above every score (bit order is value order from 0 up).
 */
static uint32_t
floor_bits(float f)
{
	uint32_t	b;

	if (!(f > 0.0f))
		return 0;
	if (f > 2.0f)
		f = 2.0f;
	memcpy(&b, &f, 4);
	return b;
}

/*
 * Queue partition i's pass on its stream: probe upload, the match kernel,
 * the top-k selection when k > 0 (at most ccap[i] candidates), events
 * ev[0..5] between the stages.
 */
static mcc_gpu_code
queue_part(mcc_gpu *g, int i, int nq, int k, const chunk_plan *cp, uint32_t *ccap, mcc_error *err)
{
	mcc_gpu_part *p = &g->part[i];
	mcc_gpu_code rc;
	cudaError_t e;
	const void *fn;
	int			nb = 0;
	size_t		smem = cp->blob + (size_t) (cp->bt ? 1 : MCC_GPU_WARPS) * MCC_GPU_HIST_BYTES;
	mcc_match_args a;
	void	   *args[1] = {&a};

	if ((rc = ensure_scratch(g, p, nq, k, cp->blob, err)) != MCC_GPU_OK)
		return rc;
	for (int ang = 0; ang < 256; ang++)
		g->timing.pairs += p->angle_count[ang] * cp->gate[ang];
	fn = mcc_gpu_match_kernel(cp->rcp, cp->csa, cp->zero && p->has_zero, cp->cpl, cp->bt, cp->tc);
	CK(cudaEventRecord(p->ev[0], p->st), "event");
	CK(cudaMemcpyAsync(p->blob, g->h_blob, cp->blob, cudaMemcpyHostToDevice, p->st), "probe upload");
	if (k > 0 && cp->floors)
	{
		uint32_t   *fl = p->h_small + MCC_GPU_SMALL_FLOOR(nq);

		/* h_small's earlier uses are collected: no copy of this pass reads it yet */
		for (int q = 0; q < nq; q++)
			fl[q] = floor_bits(cp->floors[q]);
		CK(cudaMemcpyAsync(p->small + MCC_GPU_SMALL_FLOOR(nq), fl, 4 * (size_t) nq,
						   cudaMemcpyHostToDevice, p->st), "floor upload");
	}
	CK(cudaMemsetAsync(p->small, 0, 4, p->st), "buffer reset");
	CK(cudaMemsetAsync(p->schist, 0, (size_t) nq * MCC_GPU_SC_BINS * 4, p->st), "buffer reset");
	CK(cudaEventRecord(p->ev[1], p->st), "event");
	if (p->n_tiles > 0)
	{
		CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, fn, mcc_gpu_block_threads(cp->tc), smem), "occupancy");
		if (nb < 1)
			return mcc_gpu_rt_err(err, MCC_GPU_CUDA, "probe batch needs %zu bytes of shared memory", smem);
		if (i == 0)
			g->timing.blocks_per_sm = nb;
		memset(&a, 0, sizeof(a));
		a.lo = p->lo;
		a.hi = p->hi;
		a.meta = p->meta;
		a.tiles = p->tiles;
		a.tncyl = p->tncyl;
		a.alive = p->alive;
		a.blob = p->blob;
		a.blob_words = (uint32_t) (cp->blob / 16);
		a.nq = nq;
		a.n_items = p->n_tiles * nq;
		a.delta = g->profile->delta_theta;
		a.scores = p->scores;
		a.score_stride = p->sc_tpl;
		a.schist = p->schist;
		a.counter = p->small;
		a.fault = i == 0 && g->fault_next;
		g->fault_next = 0;
		CK(cudaLaunchKernel(fn, dim3(p->sm_count * nb), dim3(mcc_gpu_block_threads(cp->tc)), args, smem, p->st),
		   "match kernel launch");
	}
	CK(cudaEventRecord(p->ev[2], p->st), "event");
	ccap[i] = cand_cap(p, k);
	if (k > 0)
		CK(queue_select(p, nq, k, ccap[i], cp->floors != NULL, true), "top-k selection");
	else
	{
		CK(cudaEventRecord(p->ev[5], p->st), "event");
		CK(cudaEventRecord(p->ev[3], p->st), "event");
	}
	CK(cudaEventRecord(p->ev[4], p->st), "event");
	return MCC_GPU_OK;
}

/*
 * Pinned and device hit buffers of partition p for n hits, replaced only
 * once both new ones exist (the old ones serve this pass if not).
 */
static bool
grow_hits(mcc_gpu *g, mcc_gpu_part *p, size_t n)
{
	size_t		bytes = n * sizeof(mcc_gpu_hit);
	mcc_gpu_hit *d = NULL;
	mcc_gpu_hit *h = NULL;

	if (bytes <= p->hits_cap)
		return true;
	if (bytes - p->hits_cap > mcc_gpu_room(g, p) ||
		cudaMalloc(&d, bytes) != cudaSuccess || cudaMallocHost(&h, bytes) != cudaSuccess)
	{
		cudaFree(d);
		(void) cudaGetLastError();
		return false;
	}
	cudaFree(p->d_hits);
	cudaFreeHost(p->h_hits);
	p->scratch_bytes += bytes - p->hits_cap;
	p->d_hits = d;
	p->h_hits = h;
	p->hits_cap = bytes;
	return true;
}

/*
 * This pass's hits of partition i as the merge reads them. Short lists:
 * the window of k + margin copied by queue_select, whose ties the host
 * orders by id. A list of k >= MCC_GPU_ORDER_MIN (a refining search's
 * shortlist): every candidate the selection returned made a hit and put
 * in (score, id) order on the device, then copied (queued here: *queued;
 * the caller waits for it, every partition's at once); without the device
 * memory for that, the short lists' way (the same result).
 */
static mcc_gpu_code
settle_hits(mcc_gpu *g, int i, int nq, int k, uint32_t ccap, bool *queued, mcc_error *err)
{
	mcc_gpu_part *p = &g->part[i];
	uint32_t	w = (uint32_t) k + MCC_GPU_MARGIN;
	uint32_t	maxlen = 0;
	cudaError_t e;

	*queued = false;
	if (w > ccap)
		w = ccap;
	p->hits_width = w;
	p->hits_ordered = 0;
	if (k < MCC_GPU_ORDER_MIN)
		return MCC_GPU_OK;
	CK(cudaSetDevice(p->dev), "device selection");
	for (int q = 0; q < nq; q++)
		if (p->h_small[q] > maxlen)
			maxlen = p->h_small[q];
	/* a floor left every list short: the window holds them, the host orders their ties */
	if (maxlen < MCC_GPU_ORDER_MIN)
		return MCC_GPU_OK;
	/* the order buffers first: grown hit buffers no longer hold the window */
	if (mcc_gpu_order_reserve(p, maxlen, mcc_gpu_room(g, p)) != cudaSuccess)
	{
		(void) cudaGetLastError();
		return MCC_GPU_OK;
	}
	if (maxlen > w && !grow_hits(g, p, (size_t) nq * maxlen))
		return MCC_GPU_OK;
	if (maxlen > w)
	{
		w = maxlen;
		CK(mcc_gpu_hits_launch(p, nq, ccap, w), "hit lists");
	}
	for (int q = 0; q < nq; q++)
		CK(mcc_gpu_order_launch(p, p->d_hits + (size_t) q * w, p->h_small[q]), "hit order");
	CK(cudaMemcpyAsync(p->h_hits, p->d_hits, (size_t) nq * w * sizeof(mcc_gpu_hit),
					   cudaMemcpyDeviceToHost, p->st), "result copy");
	p->hits_width = w;
	p->hits_ordered = 1;
	*queued = true;
	return MCC_GPU_OK;
}

/*
 * Wait for partition i's pass; its stage times (partition 0; its selection
 * and whole pass into slowest[0] and [1] if longer than theirs), every score
 * into scores when k == 0, else the selection again with room for every
 * candidate when a probe had more exact ties than the fast path holds.
 */
static mcc_gpu_code
collect_part(mcc_gpu *g, int i, int nq, int k, bool floored, float *scores, uint32_t *ccap,
			 double slowest[2], mcc_error *err)
{
	mcc_gpu_part *p = &g->part[i];
	mcc_gpu_code rc;
	cudaError_t e;

	if ((rc = mcc_gpu_part_wait(g, p, p->st, "search", err)) != MCC_GPU_OK)
		return rc;
	{
		/* every partition's selection and pass: the slowest one sets the pace */
		double		sel = 0;
		double		pass = 0;

		CK(mcc_gpu_rt_add_ms(&sel, p->ev[2], p->ev[3]), "timing");
		CK(mcc_gpu_rt_add_ms(&pass, p->ev[0], p->ev[4]), "timing");
		slowest[0] = sel > slowest[0] ? sel : slowest[0];
		slowest[1] = pass > slowest[1] ? pass : slowest[1];
	}
	if (i == 0)
	{
		CK(mcc_gpu_rt_add_ms(&g->timing.h2d_ms, p->ev[0], p->ev[1]), "timing");
		CK(mcc_gpu_rt_add_ms(&g->timing.match_ms, p->ev[1], p->ev[2]), "timing");
		CK(mcc_gpu_rt_add_ms(&g->timing.select_ms, p->ev[2], p->ev[3]), "timing");
		CK(mcc_gpu_rt_add_ms(&g->timing.sort_ms, p->ev[5], p->ev[3]), "timing");
		CK(mcc_gpu_rt_add_ms(&g->timing.d2h_ms, p->ev[3], p->ev[4]), "timing");
	}
	if (k == 0)
	{
		float	   *tmp = (float *) malloc(sizeof(float) * ((size_t) nq * p->n_tpl + 1));

		if (!tmp)
			return mcc_gpu_rt_err(err, MCC_GPU_OOM, "out of host memory");
		e = p->n_tpl ? cudaMemcpy2D(tmp, (size_t) p->n_tpl * 4, p->scores, (size_t) p->sc_tpl * 4,
									(size_t) p->n_tpl * 4, nq, cudaMemcpyDeviceToHost) : cudaSuccess;
		if (e != cudaSuccess)
		{
			free(tmp);
			return mcc_gpu_fail(g, e, "score copy", p->dev, err);
		}
		for (int q = 0; q < nq; q++)
			for (uint32_t lt = 0; lt < p->n_tpl; lt++)
				scores[(size_t) q * g->n_tpl + p->gidx[lt]] = tmp[(size_t) q * p->n_tpl + lt];
		free(tmp);
		return MCC_GPU_OK;
	}
	/* a probe with more exact ties than the fast path holds: again, with room for all */
	for (int q = 0; q < nq; q++)
		if (p->h_small[nq + q] && ccap[i] < p->sc_tpl)
		{
			ccap[i] = p->sc_tpl;
			g->timing.reselects++;
			CK(queue_select(p, nq, k, ccap[i], floored, false), "top-k selection");
			CK(cudaStreamSynchronize(p->st), "search");
			break;
		}
	return MCC_GPU_OK;
}
#undef CK

/*
 * One pass of probes[0..nq) over every partition: match (and select when
 * k > 0), results into hits (k > 0) or scores (k == 0).
 */
static mcc_gpu_code
run_chunk(mcc_gpu *g, const mcc_template_view *probes, int nq, int k, const float *floors,
		  mcc_gpu_hit *hits, int *nhits, float *scores, int rcp, mcc_error *err)
{
	mcc_gpu_code rc = MCC_GPU_OK;
	double		t0 = mcc_cuda_now_ms();
	double		t1;
	int			vr;
	chunk_plan	cp;
	mcc_gpu_hit_acc acc = {NULL, 0, 0};
	uint32_t	ccap[MCC_GPU_MAX_DEVICES];
	double		slowest[2] = {0, 0};	/* of the partitions: selection, pass */

	memset(&cp, 0, sizeof(cp));
	cp.rcp = rcp;
	cp.floors = floors;
	mcc_gpu_variant_params(g->opt.variant, &vr, &cp.csa, &cp.cpl, &cp.bt, &cp.tc);
	cp.blob = build_image(g, probes, nq, rcp, lean_of(cp.tc), g->h_blob, &cp.zero, cp.gate);
	g->timing.prep_ms += mcc_cuda_now_ms() - t0;
	g->timing.passes++;

	for (int i = 0; i < g->nparts; i++)
		if ((rc = queue_part(g, i, nq, k, &cp, ccap, err)) != MCC_GPU_OK)
			goto fail;
	/* wait (the caller's lock may be released meanwhile), then collect */
	t1 = mcc_cuda_now_ms();
	mcc_gpu_wait_outside(g, false, (uint32_t) ((1ull << g->nparts) - 1));
	for (int i = 0; i < g->nparts; i++)
		if ((rc = collect_part(g, i, nq, k, cp.floors != NULL, scores, ccap, slowest, err)) != MCC_GPU_OK)
			goto fail;
	g->timing.wait_ms += mcc_cuda_now_ms() - t1;
	g->timing.select_max_ms += slowest[0];
	g->timing.part_max_ms += slowest[1];
	if (k == 0)
		return MCC_GPU_OK;
	/* long lists: ordered and copied on every partition at once */
	t1 = mcc_cuda_now_ms();
	{
		bool		queued[MCC_GPU_MAX_DEVICES];

		for (int i = 0; i < g->nparts; i++)
			if ((rc = settle_hits(g, i, nq, k, ccap[i], &queued[i], err)) != MCC_GPU_OK)
				goto fail;
		for (int i = 0; i < g->nparts; i++)
			if (queued[i] && (rc = mcc_gpu_part_wait(g, &g->part[i], g->part[i].st, "search", err)) != MCC_GPU_OK)
				goto fail;
	}
	g->timing.settle_ms += mcc_cuda_now_ms() - t1;

	/*
	 * merge the partitions' candidates per probe, each list read where its
	 * partition's copy left it (a refining search's are 400,000 long at
	 * 100 M: no copy of them)
	 */
	t0 = mcc_cuda_now_ms();
	for (int q = 0; q < nq; q++)
	{
		const mcc_gpu_hit *list[MCC_GPU_MAX_DEVICES];
		size_t		len[MCC_GPU_MAX_DEVICES];
		size_t		off[MCC_GPU_MAX_DEVICES];
		bool		in_acc[MCC_GPU_MAX_DEVICES];

		acc.n = 0;
		for (int i = 0; i < g->nparts; i++)
		{
			len[i] = g->part[i].h_small[q];
			if ((rc = mcc_gpu_gather_part(g, i, q, ccap, &acc, &list[i], &in_acc[i], &off[i], err)) != MCC_GPU_OK)
				goto fail;
		}
		/* acc may have moved while it grew */
		for (int i = 0; i < g->nparts; i++)
			if (in_acc[i])
				list[i] = acc.h + off[i];
		t1 = mcc_cuda_now_ms();
		/* each partition's list is by score already: its ties to order by id (in place) */
		for (int i = 0; i < g->nparts; i++)
			if (in_acc[i] || !g->part[i].hits_ordered)
				mcc_ties_sort((mcc_gpu_hit *) list[i], len[i], &g->timing.tie_run_max);
		nhits[q] = (int) mcc_gpu_merge_lists(list, len, g->nparts, (size_t) k, hits + (size_t) q * k);
		/* the floor's bin below the floor itself: at the end, by score */
		if (cp.floors)
			while (nhits[q] > 0 && !(hits[(size_t) q * k + nhits[q] - 1].score >= cp.floors[q]))
				nhits[q]--;
		g->timing.ties_ms += mcc_cuda_now_ms() - t1;
	}
	g->timing.merge_ms += mcc_cuda_now_ms() - t0;
	free(acc.h);
	return MCC_GPU_OK;
fail:
	free(acc.h);
	if (rc != MCC_GPU_STICKY)
		mcc_gpu_drain(g);
	return rc;
}

/* Split probes into passes and run them. */
static mcc_gpu_code
run(mcc_gpu *g, const mcc_template_view *probes, int nq, int k, const float *floors,
	mcc_gpu_hit *hits, int *nhits, float *scores, mcc_error *err)
{
	mcc_gpu_code rc;
	double		t0 = mcc_cuda_now_ms();
	int			rcp, csa, cpl, bt, tc;
	size_t		big = (size_t) -1;
	int			q0 = 0;

	mcc_gpu_variant_params(g->opt.variant, &rcp, &csa, &cpl, &bt, &tc);
	memset(&g->timing, 0, sizeof(g->timing));
	if (g->lost.lost)
		return mcc_gpu_rt_usable(&g->lost, err);
	if (nq < 0 || (nq > 0 && !probes))
		return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "invalid probe list");
	for (int q = 0; q < nq; q++)
		if ((rc = check_probe(g, &probes[q], q, err)) != MCC_GPU_OK)
			return rc;
	for (int i = 0; i < g->nparts; i++)
	{
		size_t		lim = g->part[i].smem_optin - 64 - (size_t) (bt ? 1 : MCC_GPU_WARPS) * MCC_GPU_HIST_BYTES;

		if (lim < big)
			big = lim;
	}
	while (q0 < nq)
	{
		size_t		sz = A16(MCC_BLOB_PDESC + sizeof(mcc_pdesc));
		int			crcp = rcp;
		int			q1 = q0;

		/* grow the pass while the image keeps 2 blocks per SM */
		while (q1 < nq && q1 - q0 < g->opt.max_batch)
		{
			size_t		add = probe_bytes(probes[q1].n_cyl, crcp, lean_of(tc)) + sizeof(mcc_pdesc);

			if (q1 > q0 && sz + add > MCC_GPU_BLOB_SMALL)
				break;
			sz += add;
			q1++;
		}
		if (sz > big && crcp != MCC_RCP_FP64)
		{
			/* a probe too large for its rcp table in shared memory */
			crcp = MCC_RCP_FP64;
			sz = A16(MCC_BLOB_PDESC + sizeof(mcc_pdesc) * 2) + probe_bytes(probes[q0].n_cyl, crcp, 0);
			q1 = q0 + 1;
		}
		if (sz + 64 > g->h_blob_cap)
		{
			cudaFreeHost(g->h_blob);
			g->h_blob = NULL;
			g->h_blob_cap = 0;
			if (cudaMallocHost(&g->h_blob, sz * 2 + 64) != cudaSuccess)
				return mcc_gpu_fail(g, cudaGetLastError(), "pinned host allocation", -1, err);
			g->h_blob_cap = sz * 2 + 64;
		}
		rc = run_chunk(g, probes + q0, q1 - q0, k, floors ? floors + q0 : NULL,
					   hits ? hits + (size_t) q0 * k : NULL,
					   nhits ? nhits + q0 : NULL, scores ? scores + (size_t) q0 * g->n_tpl : NULL,
					   crcp, err);
		if (rc != MCC_GPU_OK)
			return rc;
		q0 = q1;
	}
	g->timing.total_ms = mcc_cuda_now_ms() - t0;
	return MCC_GPU_OK;
}

/* Top-k search, with a floor per probe or none. */
mcc_gpu_code
mcc_gpu_search_min(mcc_gpu *g, const mcc_template_view *probes, int nq, int k,
				   const float *min_score, mcc_gpu_hit *hits, int *nhits, mcc_error *err)
{
	if (k < 1 || k > (1 << 20))
		return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "k = %d is out of range", k);
	return run(g, probes, nq, k, min_score, hits, nhits, NULL, err);
}

mcc_gpu_code
mcc_gpu_search(mcc_gpu *g, const mcc_template_view *probes, int nq, int k,
			   mcc_gpu_hit *hits, int *nhits, mcc_error *err)
{
	return mcc_gpu_search_min(g, probes, nq, k, NULL, hits, nhits, err);
}

/* Every score (test entry). */
mcc_gpu_code
mcc_gpu_score_all(mcc_gpu *g, const mcc_template_view *probes, int nq, float *scores,
				  mcc_error *err)
{
	return run(g, probes, nq, 0, NULL, NULL, NULL, scores, err);
}
