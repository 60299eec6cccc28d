/*
 * mcc_gpu_gallery.cu: gallery upload, incremental append and tombstones.
 *
 * Templates are spread over the partitions (contiguous ranges on upload,
 * the emptiest partition on append). A partition stores its templates in
 * tiles of 32 (mcc_gpu_int.h); an append rebuilds only the last, partial
 * tile and adds new ones after it, and a removal clears one alive flag.
 *
 * The cylinders (36 bytes each, nearly all of an upload's bytes) are built
 * into pinned staging buffers a run of tiles at a time and copied with
 * cudaMemcpyAsync on a stream of their own, so that the next run is built
 * while the previous one travels, at the speed of pinned copies; the host
 * never holds the whole partition's cylinders.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcc_gpu_int.h"

#define CK(call, what) \
	do { cudaError_t e_ = (call); \
		if (e_ != cudaSuccess) { rc = mcc_gpu_fail(g, e_, what, p->dev, err); goto fail; } \
	} while (0)

/* Grow a device array to hold n elements, keeping the first keep. */
cudaError_t
mcc_gpu_grow(void **ptr, size_t elem, uint32_t *cap, uint32_t n, uint32_t keep, size_t *bytes)
{
	uint32_t	ncap;
	void	   *np = NULL;
	cudaError_t e;

	if (n <= *cap)
		return cudaSuccess;
	ncap = *cap ? *cap : 64;
	while (ncap < n)
		ncap = ncap > 0x7fffffffu / 3 * 2 ? n : ncap + ncap / 2;
	if ((e = cudaMalloc(&np, elem * ncap)) != cudaSuccess)
		return e;
	if (keep && *ptr && (e = cudaMemcpy(np, *ptr, elem * keep, cudaMemcpyDeviceToDevice)) != cudaSuccess)
	{
		cudaFree(np);
		return e;
	}
	cudaFree(*ptr);
	*ptr = np;
	*bytes += elem * (ncap - *cap);
	*cap = ncap;
	return cudaSuccess;
}

/* Size needed after growth (the rule of mcc_gpu_grow()), for the memory check. */
size_t
mcc_gpu_grown(size_t elem, uint32_t cap, uint32_t n)
{
	uint32_t	ncap;

	if (n <= cap)
		return 0;
	ncap = cap ? cap : 64;
	while (ncap < n)
		ncap = ncap > 0x7fffffffu / 3 * 2 ? n : ncap + ncap / 2;
	return elem * (ncap - cap);
}

/* Make room in the host index maps for n gallery templates. */
static bool
map_reserve(mcc_gpu *g, uint32_t n)
{
	uint32_t	cap = g->map_cap ? g->map_cap : 1024;
	int64_t    *ids;
	mcc_gpu_tref *tref;

	if (n <= g->map_cap)
		return true;
	while (cap < n)
		cap = cap > 0x7fffffffu ? n : cap * 2;
	ids = (int64_t *) realloc(g->ids, sizeof(int64_t) * cap);
	if (ids)
		g->ids = ids;
	tref = (mcc_gpu_tref *) realloc(g->tref, sizeof(mcc_gpu_tref) * cap);
	if (tref)
		g->tref = tref;
	if (!ids || !tref)
		return false;
	g->map_cap = cap;
	return true;
}

/* Check a soa against the context. */
static mcc_gpu_code
check_soa(mcc_gpu *g, const mcc_soa *s, mcc_error *err)
{
	if (g->lost.lost)
		return mcc_gpu_rt_usable(&g->lost, err);
	if (!s || !s->profile || s->profile->id != g->profile->id)
		return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "gallery profile differs from the GPU context's");
	if (s->words != 4)
		return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "gallery has %d words per cylinder, expected 4", s->words);
	return MCC_GPU_OK;
}

/*
 * What an append builds for partition p: the tiles t0..n_tiles (t0 the
 * partial last one, rebuilt) on the host, then uploaded from cylinder slot
 * c0 and refinement record rc0 on.
 */
typedef struct part_build
{
	uint32_t	t0;				/* first tile to (re)build */
	uint32_t	n_tpl;			/* templates after the add */
	uint32_t	n_tiles;		/* tiles after the add */
	uint32_t	c0;				/* first cylinder slot rebuilt */
	uint64_t	ncyl_new;		/* cylinder slots from c0 on */
	uint32_t	rc0;			/* first record of the rebuilt templates */
	uint32_t	n_rc;			/* records after the add */
	uint4	   *hlo,
			   *hhi;			/* cylinder bits (a staging buffer: slot d at d - sbase) */
	uint32_t   *hmeta;			/* angle, template in tile, popcount, valid */
	uint32_t	sbase;			/* the staging buffer's first slot, from c0 */
	uint2	   *htile;			/* first slot, cylinders | templates << 16 */
	uint16_t   *hnc;			/* cylinders of the new templates */
	uint8_t    *hal;			/* their alive flags */
	uint32_t   *hss;			/* sslot of the rebuilt templates' records */
	uint32_t   *tslot;			/* each tile's first slot, from c0 */
} part_build;

static void
part_build_free(part_build *b)
{
	mcc_gpu_rt_free_malloc(b->hss, b->tslot, b->htile, b->hnc, b->hal);
}

/*
 * The host index maps and template-major record offsets of p extended by
 * gl[0..cnt), and b's sizes: slots of the tiles to build, records.
 */
static mcc_gpu_code
part_index(mcc_gpu_part *p, const mcc_soa *s, const uint32_t *gl, uint32_t cnt, part_build *b,
		   mcc_error *err)
{
	uint32_t   *gidx, *toff, *tco;
	int64_t    *lid;
	uint32_t	n_tpl = p->n_tpl + cnt;
	uint32_t	n_tiles = (n_tpl + MCC_GPU_TILE - 1) / MCC_GPU_TILE;

	b->t0 = p->n_tpl / MCC_GPU_TILE;
	b->n_tpl = n_tpl;
	b->n_tiles = n_tiles;
	b->c0 = b->t0 < p->n_tiles ? p->tile_off[b->t0] : p->n_cyl;
	gidx = (uint32_t *) realloc(p->gidx, sizeof(uint32_t) * ((size_t) n_tiles * MCC_GPU_TILE));
	if (gidx)
		p->gidx = gidx;
	lid = (int64_t *) realloc(p->lid, sizeof(int64_t) * ((size_t) n_tiles * MCC_GPU_TILE));
	if (lid)
		p->lid = lid;
	toff = (uint32_t *) realloc(p->tile_off, sizeof(uint32_t) * (n_tiles + 1));
	if (toff)
		p->tile_off = toff;
	tco = (uint32_t *) realloc(p->h_tcoff, sizeof(uint32_t) * ((size_t) n_tiles * MCC_GPU_TILE + 1));
	if (tco)
		p->h_tcoff = tco;
	if (!gidx || !lid || !toff || !tco)
		return mcc_gpu_rt_err(err, MCC_GPU_OOM, "out of host memory");
	memcpy(p->gidx + p->n_tpl, gl, sizeof(uint32_t) * cnt);
	for (uint32_t i = 0; i < cnt; i++)
		p->lid[p->n_tpl + i] = s->id[gl[i]];
	/* template-major records of the new templates */
	if (p->n_tpl == 0)
		p->h_tcoff[0] = 0;
	{
		uint64_t	acc = p->h_tcoff[p->n_tpl];

		for (uint32_t k = p->n_tpl; k < n_tpl; k++)
		{
			uint32_t	gi = p->gidx[k];

			acc += s->first[gi + 1] - s->first[gi];
			if (acc > 0xffffffe0ull)
				return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "too many cylinders for one GPU partition");
			p->h_tcoff[k + 1] = (uint32_t) acc;
		}
	}
	b->rc0 = p->h_tcoff[b->t0 * MCC_GPU_TILE];
	b->n_rc = p->h_tcoff[n_tpl];

	/* cylinder slots of the tiles to build */
	b->tslot = (uint32_t *) malloc(sizeof(uint32_t) * (n_tiles - b->t0 + 1));
	if (!b->tslot)
		return mcc_gpu_rt_err(err, MCC_GPU_OOM, "out of host memory");
	b->ncyl_new = 0;
	for (uint32_t t = b->t0; t < n_tiles; t++)
	{
		uint32_t	nc = 0;

		for (uint32_t k = t * MCC_GPU_TILE; k < n_tpl && k < (t + 1) * MCC_GPU_TILE; k++)
		{
			uint32_t	gi = p->gidx[k];

			nc += s->first[gi + 1] - s->first[gi];
		}
		if (nc > 0xffff)
			return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "a tile holds %u cylinders", nc);
		b->tslot[t - b->t0] = (uint32_t) b->ncyl_new;
		b->ncyl_new += (nc + 31) & ~31u;
	}
	if (b->c0 + b->ncyl_new > 0xffffffe0ull)
		return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "too many cylinders for one GPU partition");
	return MCC_GPU_OK;
}

/* Device memory for b: the context's limit checked, then every array grown. */
static mcc_gpu_code
part_reserve(mcc_gpu *g, mcc_gpu_part *p, const part_build *b, mcc_error *err)
{
	mcc_gpu_code rc = MCC_GPU_OK;
	uint32_t	ncyl = b->c0 + (uint32_t) b->ncyl_new;
	uint32_t	n_tiles = b->n_tiles;
	size_t		need;

	need = mcc_gpu_grown(32, p->cap_cyl, ncyl) + mcc_gpu_grown(4, p->cap_cyl, ncyl) +
		mcc_gpu_grown(8, p->cap_tiles, n_tiles) + mcc_gpu_grown(15, p->cap_tpl, n_tiles * MCC_GPU_TILE) +
		mcc_gpu_grown(4, p->cap_tco, b->n_tpl + 1) + mcc_gpu_grown(4, p->cap_rc, b->n_rc);
	if (need > mcc_gpu_room(g, p))
		return mcc_gpu_rt_err(err, MCC_GPU_OOM,
							  "out of GPU memory: the gallery needs %zu more bytes on GPU %d, %zu are available",
							  need, p->dev, mcc_gpu_room(g, p));
	CK(cudaSetDevice(p->dev), "device selection");
	{
		uint32_t	cc = p->cap_cyl, ct = p->cap_tpl;

		CK(mcc_gpu_grow((void **) &p->lo, 16, &cc, ncyl, b->c0, &p->gallery_bytes), "gallery allocation");
		cc = p->cap_cyl;
		CK(mcc_gpu_grow((void **) &p->hi, 16, &cc, ncyl, b->c0, &p->gallery_bytes), "gallery allocation");
		cc = p->cap_cyl;
		CK(mcc_gpu_grow((void **) &p->meta, 4, &cc, ncyl, b->c0, &p->gallery_bytes), "gallery allocation");
		p->cap_cyl = cc;
		CK(mcc_gpu_grow((void **) &p->tiles, 8, &p->cap_tiles, n_tiles, p->n_tiles, &p->gallery_bytes), "gallery allocation");
		CK(mcc_gpu_grow((void **) &p->tncyl, 2, &ct, n_tiles * MCC_GPU_TILE, p->n_tpl, &p->gallery_bytes), "gallery allocation");
		ct = p->cap_tpl;
		CK(mcc_gpu_grow((void **) &p->alive, 1, &ct, n_tiles * MCC_GPU_TILE, p->n_tpl, &p->gallery_bytes), "gallery allocation");
		ct = p->cap_tpl;
		CK(mcc_gpu_grow((void **) &p->d_gidx, 4, &ct, n_tiles * MCC_GPU_TILE, p->n_tpl, &p->gallery_bytes), "gallery allocation");
		ct = p->cap_tpl;
		CK(mcc_gpu_grow((void **) &p->d_lid, 8, &ct, n_tiles * MCC_GPU_TILE, p->n_tpl, &p->gallery_bytes), "gallery allocation");
		p->cap_tpl = ct;
		CK(mcc_gpu_grow((void **) &p->tcoff, 4, &p->cap_tco, b->n_tpl + 1, p->n_tpl + 1, &p->gallery_bytes),
		   "gallery allocation");
		CK(mcc_gpu_grow((void **) &p->sslot, 4, &p->cap_rc, b->n_rc, p->n_rc, &p->gallery_bytes), "gallery allocation");
	}
fail:
	return rc;
}

/* The host buffers of b (part_build_free frees them); false if out of memory. */
static bool
part_build_alloc(part_build *b, uint32_t cnt)
{
	b->htile = (uint2 *) malloc(8 * (b->n_tiles - b->t0));
	b->hnc = (uint16_t *) malloc(2 * (size_t) cnt);
	b->hal = (uint8_t *) malloc(cnt);
	b->hss = (uint32_t *) malloc(sizeof(uint32_t) * ((size_t) (b->n_rc - b->rc0) + 1));
	return b->htile && b->hnc && b->hal && b->hss;
}

/*
 * What one builder thread owns while it builds its tiles: the scratch of a
 * tile's order and what the partition learns from them (merged after the
 * threads end: integer counts, so the order of the sums does not matter).
 */
typedef struct tile_worker
{
	mcc_gpu_part *p;
	const mcc_soa *s;
	part_build *b;
	uint32_t	t0,
				t1;				/* its tiles */
	uint32_t	c;				/* the first tile's first slot, from b->c0 */
	uint32_t	win;
	uint32_t   *ord,
			   *ord2;
	uint8_t    *otl,
			   *otl2;
	int			has_zero;
	double		angle_count[256];
	mcc_gpu_code rc;
	mcc_error	err;
} tile_worker;

/*
 * Build tile t of p on the host into b from slot *c on (advanced past the
 * tile's slots): its cylinders by angle (a stable counting sort), then by
 * popcount inside windows of win cylinders when win > 32.
 */
static mcc_gpu_code
tile_build(tile_worker *w, uint32_t t, uint32_t *c, mcc_error *err)
{
	mcc_gpu_part *p = w->p;
	const mcc_soa *s = w->s;
	part_build *b = w->b;
	uint32_t	win = w->win;
	uint32_t	k0 = t * MCC_GPU_TILE;
	uint32_t	k1 = b->n_tpl < k0 + MCC_GPU_TILE ? b->n_tpl : k0 + MCC_GPU_TILE;
	uint32_t	pos[257];
	uint32_t	nc = 0;
	uint32_t   *ord = w->ord;
	uint8_t    *otl = w->otl;

	/* counting sort of the tile's cylinders by angle (stable) */
	memset(pos, 0, sizeof(pos));
	for (uint32_t k = k0; k < k1; k++)
	{
		uint32_t	gi = p->gidx[k];

		for (uint32_t j = s->first[gi]; j < s->first[gi + 1]; j++)
			pos[s->angle[j] + 1]++;
		nc += s->first[gi + 1] - s->first[gi];
	}
	for (int a = 0; a < 256; a++)
		pos[a + 1] += pos[a];
	for (uint32_t k = k0; k < k1; k++)
	{
		uint32_t	gi = p->gidx[k];

		for (uint32_t j = s->first[gi]; j < s->first[gi + 1]; j++)
		{
			uint32_t	d = pos[s->angle[j]]++;

			ord[d] = j;
			otl[d] = (uint8_t) (k - k0);
			/*
			 * 255-bit cylinders: bit 255 and popcount 256 cannot occur,
			 * and the stored popcount is that of the bits (the tensor-core
			 * kernel derives the xor popcount from it).
			 */
			if (s->pc[j] > 255 || (s->bits[3 * (size_t) s->cap_cyl + j] >> 63) ||
				s->pc[j] != __builtin_popcountll(s->bits[j]) +
				__builtin_popcountll(s->bits[(size_t) s->cap_cyl + j]) +
				__builtin_popcountll(s->bits[2 * (size_t) s->cap_cyl + j]) +
				__builtin_popcountll(s->bits[3 * (size_t) s->cap_cyl + j]))
				return mcc_gpu_rt_err(err, MCC_GPU_INVALID,
									  "gallery cylinder %u has bits beyond the profile's 255 or a wrong popcount", j);
		}
	}
	/* optionally, popcount order inside windows of the angle order */
	for (uint32_t w0 = 0; win > 32 && w0 < nc; w0 += win)
	{
		uint32_t	w1 = nc < w0 + win ? nc : w0 + win;
		uint32_t	pcs[258];

		memset(pcs, 0, sizeof(pcs));
		for (uint32_t i = w0; i < w1; i++)
			pcs[s->pc[ord[i]] + 1]++;
		for (int v = 0; v < 257; v++)
			pcs[v + 1] += pcs[v];
		for (uint32_t i = w0; i < w1; i++)
		{
			uint32_t	d = w0 + pcs[s->pc[ord[i]]]++;

			w->ord2[d] = ord[i];
			w->otl2[d] = otl[i];
		}
		memcpy(ord + w0, w->ord2 + w0, 4 * (size_t) (w1 - w0));
		memcpy(otl + w0, w->otl2 + w0, w1 - w0);
	}
	for (uint32_t i = 0; i < nc; i++)
	{
		uint32_t	j = ord[i];
		uint32_t	d = *c + i;
		uint32_t	h = d - b->sbase;	/* in the staging buffer */
		uint64_t	w0 = s->bits[0 * (size_t) s->cap_cyl + j];
		uint64_t	w1 = s->bits[1 * (size_t) s->cap_cyl + j];
		uint64_t	w2 = s->bits[2 * (size_t) s->cap_cyl + j];
		uint64_t	w3 = s->bits[3 * (size_t) s->cap_cyl + j];
		uint32_t	pc = s->pc[j];

		b->hlo[h] = make_uint4((uint32_t) w0, (uint32_t) (w0 >> 32), (uint32_t) w1, (uint32_t) (w1 >> 32));
		b->hhi[h] = make_uint4((uint32_t) w2, (uint32_t) (w2 >> 32), (uint32_t) w3, (uint32_t) (w3 >> 32));
		b->hmeta[h] = s->angle[j] | (uint32_t) otl[i] << 8 | pc << 16 | 1u << 31;
		/* the slot of the template's stored cylinder j - first, for refinement */
		b->hss[p->h_tcoff[k0 + otl[i]] - b->rc0 + (j - s->first[p->gidx[k0 + otl[i]]])] = b->c0 + d;
		if (pc == 0)
			w->has_zero = 1;
		if (k0 + otl[i] >= p->n_tpl)
			w->angle_count[s->angle[j]] += 1;
	}
	/* the padding up to 32 slots: empty, not valid (the buffer is reused) */
	for (uint32_t i = nc; i < ((nc + 31) & ~31u); i++)
	{
		uint32_t	h = *c + i - b->sbase;

		b->hlo[h] = make_uint4(0, 0, 0, 0);
		b->hhi[h] = make_uint4(0, 0, 0, 0);
		b->hmeta[h] = 0;
	}
	b->htile[t - b->t0] = make_uint2(b->c0 + *c, nc | (k1 - k0) << 16);
	p->tile_off[t] = b->c0 + *c;
	*c += (nc + 31) & ~31u;
	return MCC_GPU_OK;
}

/* A worker's tiles, in order, each from the slot after the one before. */
static void *
tile_worker_run(void *arg)
{
	tile_worker *w = (tile_worker *) arg;
	uint32_t	c = w->c;

	w->ord = (uint32_t *) malloc(4 * MCC_GPU_TILE * (MCC_MAX_CYL + 1));
	w->ord2 = (uint32_t *) malloc(4 * MCC_GPU_TILE * (MCC_MAX_CYL + 1));
	w->otl = (uint8_t *) malloc(MCC_GPU_TILE * (MCC_MAX_CYL + 1));
	w->otl2 = (uint8_t *) malloc(MCC_GPU_TILE * (MCC_MAX_CYL + 1));
	if (!w->ord || !w->ord2 || !w->otl || !w->otl2)
		w->rc = mcc_gpu_rt_err(&w->err, MCC_GPU_OOM, "out of host memory");
	for (uint32_t t = w->t0; w->rc == MCC_GPU_OK && t < w->t1; t++)
		w->rc = tile_build(w, t, &c, &w->err);
	free(w->ord);
	free(w->ord2);
	free(w->otl);
	free(w->otl2);
	return NULL;
}

/*
 * Build tiles [ta, tb) of p into b. A tile's slots start where
 * the tiles before it end (each rounded up to 32), so with those offsets
 * (b->tslot, from part_index) the tiles are independent: a large upload builds them on
 * several threads (the host-side packing, not the copy, is most of an
 * upload's time), a small append on this one. Every output goes where the
 * one-thread order puts it, and the first failing tile's error is returned,
 * as the one-thread loop would.
 */
static mcc_gpu_code
tiles_build(mcc_gpu *g, mcc_gpu_part *p, const mcc_soa *s, part_build *b, uint32_t ta,
			uint32_t tb, mcc_error *err)
{
	uint32_t	ntiles = tb - ta;
	/* one thread per 256 tiles started (ntiles / 256 + 1), at most 16 */
	uint32_t	nth = (uint32_t) mcc_job_shares((size_t) ntiles + 256, 256, 16);
	tile_worker *w;
	mcc_gpu_code rc = MCC_GPU_OK;

	w = (tile_worker *) calloc(nth, sizeof(tile_worker));
	if (!w)
		return mcc_gpu_rt_err(err, MCC_GPU_OOM, "out of host memory");
	for (uint32_t i = 0; i < nth; i++)
	{
		w[i].p = p;
		w[i].s = s;
		w[i].b = b;
		w[i].win = g->opt.pc_window;
		w[i].t0 = ta + (uint32_t) ((uint64_t) ntiles * i / nth);
		w[i].t1 = ta + (uint32_t) ((uint64_t) ntiles * (i + 1) / nth);
		w[i].rc = MCC_GPU_OK;
		mcc_error_clear(&w[i].err);
		w[i].c = b->tslot[w[i].t0 - b->t0];	/* part_index summed the tiles before */
	}
	mcc_job_run_each((int) nth, tile_worker_run, w, sizeof(tile_worker));
	for (uint32_t i = 0; i < nth; i++)
	{
		if (w[i].rc != MCC_GPU_OK && rc == MCC_GPU_OK)
		{
			rc = w[i].rc;
			*err = w[i].err;
		}
	}
	for (uint32_t i = 0; rc == MCC_GPU_OK && i < nth; i++)
	{
		p->has_zero |= w[i].has_zero;
		for (int a = 0; a < 256; a++)
			p->angle_count[a] += w[i].angle_count[a];
	}
	free(w);
	return rc;
}

#define STAGE_SLOTS		(4u << 20)	/* cylinder slots per staging buffer (144 MB) */
#define STAGE_BUFS		2			/* one built while the other is copied */

/* A staging buffer: one host allocation holding lo, hi and meta. */
typedef struct stage_buf
{
	void	   *mem;
	int			pinned;			/* cudaHostAlloc'ed (else malloc'ed) */
	uint4	   *lo,
			   *hi;
	uint32_t   *meta;
	cudaEvent_t done;			/* recorded after its last copies */
	int			used;			/* done was recorded */
} stage_buf;

typedef struct stage
{
	cudaStream_t stream;
	int			has_stream;
	stage_buf	buf[STAGE_BUFS];
} stage;

/*
 * Buffers of cap slots on p's device. Pinned memory refused (a host
 * limit): pageable buffers, copied the same way at pageable speed.
 */
static mcc_gpu_code
stage_open(mcc_gpu *g, mcc_gpu_part *p, stage *st, size_t cap, mcc_error *err)
{
	mcc_gpu_code rc = MCC_GPU_OK;

	memset(st, 0, sizeof(*st));
	CK(cudaSetDevice(p->dev), "device selection");
	CK(cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking), "upload stream");
	st->has_stream = 1;
	for (int i = 0; i < STAGE_BUFS; i++)
	{
		stage_buf  *sb = &st->buf[i];

		if (cudaHostAlloc(&sb->mem, 36 * cap, cudaHostAllocPortable) == cudaSuccess)
			sb->pinned = 1;
		else
		{
			(void) cudaGetLastError();	/* not sticky: forget it */
			sb->mem = malloc(36 * cap);
			if (!sb->mem)
				return mcc_gpu_rt_err(err, MCC_GPU_OOM, "out of host memory");
		}
		sb->lo = (uint4 *) sb->mem;
		sb->hi = sb->lo + cap;
		sb->meta = (uint32_t *) (sb->hi + cap);
		CK(cudaEventCreateWithFlags(&sb->done, cudaEventDisableTiming), "upload event");
	}
fail:
	return rc;
}

/* Wait for the copies in flight, then free the buffers (on every path). */
static void
stage_close(mcc_gpu_part *p, stage *st)
{
	cudaSetDevice(p->dev);
	if (st->has_stream)
		cudaStreamSynchronize(st->stream);
	for (int i = 0; i < STAGE_BUFS; i++)
	{
		stage_buf  *sb = &st->buf[i];

		if (sb->done)
			cudaEventDestroy(sb->done);
		if (sb->pinned)
			cudaFreeHost(sb->mem);
		else
			free(sb->mem);
	}
	if (st->has_stream)
		cudaStreamDestroy(st->stream);
}

/* Slot of tile t from c0 (the end of the build for t = n_tiles). */
static uint32_t
tile_slot(const part_build *b, uint32_t t)
{
	return t < b->n_tiles ? b->tslot[t - b->t0] : (uint32_t) b->ncyl_new;
}

/*
 * Build tiles [b->t0, b->n_tiles) of p and send their cylinders to slots
 * c0... of the device: runs of tiles that fit a staging buffer, each built
 * (tiles_build, several threads) into the buffer whose previous copies are
 * done, then copied asynchronously while the next run is built. Every slot
 * gets what the one-buffer build gave it: the tiles' slots do not depend on
 * the runs, and the padding is cleared by tile_build. An append that fits
 * one buffer copies nothing unless every tile was built; a failure after
 * the first run of a larger add leaves slots from c0 written, which
 * nothing counts but the rebuilt partial tile (the engine then closes the
 * context, as after any failed add).
 */
static mcc_gpu_code
tiles_stream(mcc_gpu *g, mcc_gpu_part *p, const mcc_soa *s, part_build *b, mcc_error *err)
{
	stage		st;
	mcc_gpu_code rc;
	/* a small append: buffers of its size (a tile holds at most 0xffff + 31 slots) */
	size_t		cap = b->ncyl_new < STAGE_SLOTS ? (size_t) b->ncyl_new + 32 : STAGE_SLOTS;
	uint32_t	ta = b->t0;
	int			k = 0;

	if ((rc = stage_open(g, p, &st, cap, err)) != MCC_GPU_OK)
		goto fail;
	while (ta < b->n_tiles)
	{
		stage_buf  *sb = &st.buf[k++ % STAGE_BUFS];
		uint32_t	s0 = tile_slot(b, ta);
		uint32_t	tb = ta + 1;
		size_t		n;

		/* one tile always fits */
		while (tb < b->n_tiles && tile_slot(b, tb + 1) - s0 <= cap)
			tb++;
		if (sb->used)
			CK(cudaEventSynchronize(sb->done), "gallery upload");
		b->hlo = sb->lo;
		b->hhi = sb->hi;
		b->hmeta = sb->meta;
		b->sbase = s0;
		if ((rc = tiles_build(g, p, s, b, ta, tb, err)) != MCC_GPU_OK)
			goto fail;
		n = tile_slot(b, tb) - s0;
		CK(cudaMemcpyAsync(p->lo + b->c0 + s0, sb->lo, 16 * n, cudaMemcpyHostToDevice, st.stream),
		   "gallery upload");
		CK(cudaMemcpyAsync(p->hi + b->c0 + s0, sb->hi, 16 * n, cudaMemcpyHostToDevice, st.stream),
		   "gallery upload");
		CK(cudaMemcpyAsync(p->meta + b->c0 + s0, sb->meta, 4 * n, cudaMemcpyHostToDevice, st.stream),
		   "gallery upload");
		CK(cudaEventRecord(sb->done, st.stream), "gallery upload");
		sb->used = 1;
		ta = tb;
	}
	CK(cudaStreamSynchronize(st.stream), "gallery upload");
fail:
	stage_close(p, &st);
	b->hlo = b->hhi = NULL;
	b->hmeta = NULL;
	return rc;
}

/* Upload what b rebuilt and added, then count gl[0..cnt) in p. */
static mcc_gpu_code
part_upload(mcc_gpu *g, mcc_gpu_part *p, const uint32_t *gl, uint32_t cnt, const part_build *b,
			mcc_error *err)
{
	mcc_gpu_code rc = MCC_GPU_OK;
	uint32_t	c0 = b->c0,
				t0 = b->t0;
	uint64_t	ncyl_new = b->ncyl_new;

	/* the cylinders went up with tiles_stream */
	CK(cudaMemcpy(p->tiles + t0, b->htile, 8 * (size_t) (b->n_tiles - t0), cudaMemcpyHostToDevice), "gallery upload");
	CK(cudaMemcpy(p->tncyl + p->n_tpl, b->hnc, 2 * (size_t) cnt, cudaMemcpyHostToDevice), "gallery upload");
	CK(cudaMemcpy(p->alive + p->n_tpl, b->hal, cnt, cudaMemcpyHostToDevice), "gallery upload");
	CK(cudaMemcpy(p->d_gidx + p->n_tpl, p->gidx + p->n_tpl, 4 * (size_t) cnt, cudaMemcpyHostToDevice),
	   "gallery upload");
	CK(cudaMemcpy(p->d_lid + p->n_tpl, p->lid + p->n_tpl, 8 * (size_t) cnt, cudaMemcpyHostToDevice),
	   "gallery upload");
	CK(cudaMemcpy(p->tcoff + p->n_tpl, p->h_tcoff + p->n_tpl, 4 * ((size_t) cnt + 1), cudaMemcpyHostToDevice),
	   "gallery upload");
	if (b->n_rc > b->rc0)
		CK(cudaMemcpy(p->sslot + b->rc0, b->hss, 4 * (size_t) (b->n_rc - b->rc0), cudaMemcpyHostToDevice),
		   "gallery upload");
	for (uint32_t i = 0; i < cnt; i++)
	{
		g->tref[gl[i]].where = (uint8_t) (p - g->part);
		g->tref[gl[i]].local = p->n_tpl + i;
		g->tref[gl[i]].ncyl = b->hnc[i];
	}
	p->n_tpl = b->n_tpl;
	p->n_tiles = b->n_tiles;
	p->n_cyl = c0 + (uint32_t) ncyl_new;
	p->tile_off[b->n_tiles] = p->n_cyl;
	p->n_rc = b->n_rc;
fail:
	return rc;
}

/*
 * Add templates gl[0..cnt) (gallery indices of s) to partition p: rebuild
 * its partial last tile, append the new tiles, upload the changed part.
 */
static mcc_gpu_code
part_add(mcc_gpu *g, mcc_gpu_part *p, const mcc_soa *s, const uint32_t *gl,
		 uint32_t cnt, mcc_error *err)
{
	mcc_gpu_code rc;
	part_build	b;

	if (cnt == 0)
		return MCC_GPU_OK;
	memset(&b, 0, sizeof(b));
	if ((rc = part_index(p, s, gl, cnt, &b, err)) == MCC_GPU_OK)
		rc = part_reserve(g, p, &b, err);
	if (rc == MCC_GPU_OK && !part_build_alloc(&b, cnt))
		rc = mcc_gpu_rt_err(err, MCC_GPU_OOM, "out of host memory");
	if (rc == MCC_GPU_OK)
		rc = tiles_stream(g, p, s, &b, err);
	if (rc == MCC_GPU_OK)
	{
		for (uint32_t i = 0; i < cnt; i++)
		{
			uint32_t	gi = gl[i];

			b.hnc[i] = (uint16_t) (s->first[gi + 1] - s->first[gi]);
			b.hal[i] = 1;
		}
		rc = part_upload(g, p, gl, cnt, &b, err);
	}
	part_build_free(&b);
	return rc;
}

/* Record ids and flags of gallery templates [t0, t1). */
static mcc_gpu_code
map_add(mcc_gpu *g, const mcc_soa *s, uint32_t t0, uint32_t t1, mcc_error *err)
{
	if (!map_reserve(g, t1))
		return mcc_gpu_rt_err(err, MCC_GPU_OOM, "out of host memory");
	for (uint32_t i = t0; i < t1; i++)
	{
		g->ids[i] = s->id[i];
		memset(&g->tref[i], 0, sizeof(mcc_gpu_tref));
	}
	return MCC_GPU_OK;
}

/* Replace the gallery by all templates of s. */
mcc_gpu_code
mcc_gpu_upload(mcc_gpu *g, const mcc_soa *s, mcc_error *err)
{
	mcc_gpu_code rc;
	uint32_t   *gl;
	uint64_t	total = 0, acc = 0;
	uint32_t	k = 0;

	if ((rc = check_soa(g, s, err)) != MCC_GPU_OK)
		return rc;
	mcc_gpu_rstage_drain(g);	/* refinement copies in flight write the arrays freed here */
	for (int i = 0; i < g->nparts; i++)
	{
		mcc_gpu_part *p = &g->part[i];

		cudaSetDevice(p->dev);
		mcc_gpu_part_free_gallery(p);	/* refinement records and unit vectors too */
		p->has_zero = 0;
		memset(p->angle_count, 0, sizeof(p->angle_count));
	}
	g->n_tpl = 0;
	rp_utab_clear(&g->utab);
	g->rstage.lost = 0;
	if ((rc = map_add(g, s, 0, s->n_tpl, err)) != MCC_GPU_OK)
		return rc;
	gl = (uint32_t *) malloc(sizeof(uint32_t) * (s->n_tpl + 1));
	if (!gl)
		return mcc_gpu_rt_err(err, MCC_GPU_OOM, "out of host memory");
	for (uint32_t i = 0; i < s->n_tpl; i++)
		gl[i] = i;
	total = s->n_cyl;
	/* contiguous ranges with about equal cylinder counts */
	for (int i = 0; i < g->nparts; i++)
	{
		uint32_t	k0 = k;
		uint64_t	goal = total * (uint64_t) (i + 1) / g->nparts;

		while (k < s->n_tpl && (i == g->nparts - 1 || acc + (s->first[k + 1] - s->first[k]) / 2 < goal))
		{
			acc += s->first[k + 1] - s->first[k];
			k++;
		}
		if ((rc = part_add(g, &g->part[i], s, gl + k0, k - k0, err)) != MCC_GPU_OK)
			break;
	}
	free(gl);
	if (rc == MCC_GPU_OK)
		g->n_tpl = s->n_tpl;
	return rc;
}

/* Add templates [t0, t1) of s. */
mcc_gpu_code
mcc_gpu_append(mcc_gpu *g, const mcc_soa *s, uint32_t t0, uint32_t t1, mcc_error *err)
{
	mcc_gpu_code rc;
	uint32_t   *gl[MCC_GPU_MAX_DEVICES];
	uint32_t	cnt[MCC_GPU_MAX_DEVICES];
	uint32_t	load[MCC_GPU_MAX_DEVICES];

	if ((rc = check_soa(g, s, err)) != MCC_GPU_OK)
		return rc;
	if (t0 != g->n_tpl || t1 < t0 || t1 > s->n_tpl)
		return mcc_gpu_rt_err(err, MCC_GPU_INVALID,
						   "append range [%u, %u) does not follow the %u templates given",
						   t0, t1, g->n_tpl);
	if ((rc = map_add(g, s, t0, t1, err)) != MCC_GPU_OK)
		return rc;
	for (int i = 0; i < g->nparts; i++)
	{
		gl[i] = (uint32_t *) malloc(sizeof(uint32_t) * (t1 - t0 + 1));
		cnt[i] = 0;
		load[i] = g->part[i].n_tpl;
		if (!gl[i])
			rc = MCC_GPU_OOM;
	}
	/* each new template to the partition holding the fewest */
	for (uint32_t t = t0; rc == MCC_GPU_OK && t < t1; t++)
	{
		int			best = 0;

		for (int i = 1; i < g->nparts; i++)
			if (load[i] < load[best])
				best = i;
		gl[best][cnt[best]++] = t;
		load[best]++;
	}
	if (rc != MCC_GPU_OK)
		mcc_gpu_rt_err(err, rc, "out of host memory");
	for (int i = 0; rc == MCC_GPU_OK && i < g->nparts; i++)
		rc = part_add(g, &g->part[i], s, gl[i], cnt[i], err);
	for (int i = 0; i < g->nparts; i++)
		free(gl[i]);
	if (rc == MCC_GPU_OK)
		g->n_tpl = t1;
	return rc;
}

/* Tombstone one template. */
mcc_gpu_code
mcc_gpu_remove(mcc_gpu *g, uint32_t index, mcc_error *err)
{
	mcc_gpu_part *p;
	cudaError_t e;

	if (g->lost.lost)
		return mcc_gpu_rt_usable(&g->lost, err);
	if (index >= g->n_tpl)
		return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "template index %u is out of range (%u templates)",
						   index, g->n_tpl);
	if (g->tref[index].removed)
		return MCC_GPU_OK;
	p = &g->part[g->tref[index].where];
	if ((e = cudaSetDevice(p->dev)) != cudaSuccess ||
		(e = cudaMemsetAsync(p->alive + g->tref[index].local, 0, 1, p->st)) != cudaSuccess ||
		(e = cudaStreamSynchronize(p->st)) != cudaSuccess)
		return mcc_gpu_fail(g, e, "template removal", p->dev, err);
	g->tref[index].removed = 1;
	return MCC_GPU_OK;
}
