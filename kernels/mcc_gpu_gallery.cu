/*
 * mcc_gpu_gallery.cu: gallery upload, incremental append and tombstones.
 *
 * Templates are spread over the partitions (contiguous ranges on upload,
 * the emptiest partition on append). A partition stores its templates in
 * tiles of 32 (mcc_gpu_int.h); an append rebuilds only the last, partial
 * tile and adds new ones after it, and a removal clears one alive flag.
 */
#include <stdlib.h>
#include <string.h>

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
	uint8_t    *where, *removed, *refd;
	uint32_t   *local;

	if (n <= g->map_cap)
		return true;
	while (cap < n)
		cap = cap > 0x7fffffffu ? n : cap * 2;
	ids = (int64_t *) realloc(g->ids, sizeof(int64_t) * cap);
	if (ids)
		g->ids = ids;
	where = (uint8_t *) realloc(g->where, cap);
	if (where)
		g->where = where;
	local = (uint32_t *) realloc(g->local, sizeof(uint32_t) * cap);
	if (local)
		g->local = local;
	removed = (uint8_t *) realloc(g->removed, cap);
	if (removed)
		g->removed = removed;
	refd = (uint8_t *) realloc(g->refd, cap);
	if (refd)
		g->refd = refd;
	if (!ids || !where || !local || !removed || !refd)
		return false;
	g->map_cap = cap;
	return true;
}

/* Check a soa against the context. */
static mcc_gpu_code
check_soa(mcc_gpu *g, const mcc_soa *s, mcc_error *err)
{
	if (g->broken)
		return mcc_gpu_err(err, MCC_GPU_STICKY, "%s", g->broken_msg);
	if (!s || !s->profile || s->profile->id != g->profile->id)
		return mcc_gpu_err(err, MCC_GPU_INVALID, "gallery profile differs from the GPU context's");
	if (s->words != 4)
		return mcc_gpu_err(err, MCC_GPU_INVALID, "gallery has %d words per cylinder, expected 4", s->words);
	return MCC_GPU_OK;
}

/*
 * Add templates gl[0..cnt) (gallery indices of s) to partition p: rebuild
 * its partial last tile, append the new tiles, upload the changed part.
 */
static mcc_gpu_code
part_add(mcc_gpu *g, mcc_gpu_part *p, const mcc_soa *s, const uint32_t *gl,
		 uint32_t cnt, mcc_error *err)
{
	mcc_gpu_code rc = MCC_GPU_OK;
	uint32_t	t0 = p->n_tpl / MCC_GPU_TILE;	/* first tile to (re)build */
	uint32_t	n_tpl = p->n_tpl + cnt;
	uint32_t	n_tiles = (n_tpl + MCC_GPU_TILE - 1) / MCC_GPU_TILE;
	uint32_t	c0 = t0 < p->n_tiles ? p->tile_off[t0] : p->n_cyl;
	uint64_t	ncyl_new = 0;
	uint32_t   *gidx = NULL, *toff = NULL;
	uint4	   *hlo = NULL, *hhi = NULL;
	uint32_t   *hmeta = NULL;
	uint2	   *htile = NULL;
	uint16_t   *hnc = NULL;
	uint8_t    *hal = NULL;
	uint32_t   *ord = NULL, *ord2 = NULL;
	uint8_t    *otl = NULL, *otl2 = NULL;
	uint32_t	win = g->opt.pc_window;
	size_t		need;
	uint32_t	c;
	uint32_t   *tco;
	uint32_t   *hss = NULL;		/* sslot of the rebuilt templates' records */
	uint32_t	rc0;			/* their first record */
	uint32_t	n_rc;			/* records after the add */

	if (cnt == 0)
		return MCC_GPU_OK;

	/* host index maps */
	gidx = (uint32_t *) realloc(p->gidx, sizeof(uint32_t) * ((size_t) n_tiles * MCC_GPU_TILE));
	if (gidx)
		p->gidx = gidx;
	toff = (uint32_t *) realloc(p->tile_off, sizeof(uint32_t) * (n_tiles + 1));
	if (toff)
		p->tile_off = toff;
	tco = (uint32_t *) realloc(p->h_tcoff, sizeof(uint32_t) * ((size_t) n_tiles * MCC_GPU_TILE + 1));
	if (tco)
		p->h_tcoff = tco;
	if (!gidx || !toff || !tco)
		return mcc_gpu_err(err, MCC_GPU_OOM, "out of host memory");
	memcpy(p->gidx + p->n_tpl, gl, sizeof(uint32_t) * cnt);
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
				return mcc_gpu_err(err, MCC_GPU_INVALID, "too many cylinders for one GPU partition");
			p->h_tcoff[k + 1] = (uint32_t) acc;
		}
	}
	rc0 = p->h_tcoff[t0 * MCC_GPU_TILE];
	n_rc = p->h_tcoff[n_tpl];

	/* cylinder slots of the tiles to build */
	for (uint32_t t = t0; t < n_tiles; t++)
	{
		uint32_t	nc = 0;

		for (uint32_t k = t * MCC_GPU_TILE; k < n_tpl && k < (t + 1) * MCC_GPU_TILE; k++)
		{
			uint32_t	gi = p->gidx[k];

			nc += s->first[gi + 1] - s->first[gi];
		}
		if (nc > 0xffff)
			return mcc_gpu_err(err, MCC_GPU_INVALID, "a tile holds %u cylinders", nc);
		ncyl_new += (nc + 31) & ~31u;
	}
	if (c0 + ncyl_new > 0xffffffe0ull)
		return mcc_gpu_err(err, MCC_GPU_INVALID, "too many cylinders for one GPU partition");

	/* device memory: check the limit, then grow */
	need = mcc_gpu_grown(32, p->cap_cyl, c0 + (uint32_t) ncyl_new) + mcc_gpu_grown(4, p->cap_cyl, c0 + (uint32_t) ncyl_new) +
		mcc_gpu_grown(8, p->cap_tiles, n_tiles) + mcc_gpu_grown(3, p->cap_tpl, n_tiles * MCC_GPU_TILE) +
		mcc_gpu_grown(4, p->cap_tco, n_tpl + 1) + mcc_gpu_grown(4, p->cap_rc, n_rc);
	if (need > mcc_gpu_room(g, p))
		return mcc_gpu_err(err, MCC_GPU_OOM,
						   "out of GPU memory: the gallery needs %zu more bytes on GPU %d, %zu are available",
						   need, p->dev, mcc_gpu_room(g, p));
	CK(cudaSetDevice(p->dev), "device selection");
	{
		uint32_t	cc = p->cap_cyl, ct = p->cap_tpl;

		CK(mcc_gpu_grow((void **) &p->lo, 16, &cc, c0 + (uint32_t) ncyl_new, c0, &p->gallery_bytes), "gallery allocation");
		cc = p->cap_cyl;
		CK(mcc_gpu_grow((void **) &p->hi, 16, &cc, c0 + (uint32_t) ncyl_new, c0, &p->gallery_bytes), "gallery allocation");
		cc = p->cap_cyl;
		CK(mcc_gpu_grow((void **) &p->meta, 4, &cc, c0 + (uint32_t) ncyl_new, c0, &p->gallery_bytes), "gallery allocation");
		p->cap_cyl = cc;
		CK(mcc_gpu_grow((void **) &p->tiles, 8, &p->cap_tiles, n_tiles, p->n_tiles, &p->gallery_bytes), "gallery allocation");
		CK(mcc_gpu_grow((void **) &p->tncyl, 2, &ct, n_tiles * MCC_GPU_TILE, p->n_tpl, &p->gallery_bytes), "gallery allocation");
		ct = p->cap_tpl;
		CK(mcc_gpu_grow((void **) &p->alive, 1, &ct, n_tiles * MCC_GPU_TILE, p->n_tpl, &p->gallery_bytes), "gallery allocation");
		p->cap_tpl = ct;
		CK(mcc_gpu_grow((void **) &p->tcoff, 4, &p->cap_tco, n_tpl + 1, p->n_tpl + 1, &p->gallery_bytes),
		   "gallery allocation");
		CK(mcc_gpu_grow((void **) &p->sslot, 4, &p->cap_rc, n_rc, p->n_rc, &p->gallery_bytes), "gallery allocation");
	}

	/* build the tiles on the host */
	hlo = (uint4 *) malloc(16 * (ncyl_new + 1));
	hhi = (uint4 *) malloc(16 * (ncyl_new + 1));
	hmeta = (uint32_t *) calloc(ncyl_new + 1, 4);
	htile = (uint2 *) malloc(8 * (n_tiles - t0));
	hnc = (uint16_t *) malloc(2 * (size_t) cnt);
	hal = (uint8_t *) malloc(cnt);
	ord = (uint32_t *) malloc(4 * MCC_GPU_TILE * (MCC_MAX_CYL + 1));
	ord2 = (uint32_t *) malloc(4 * MCC_GPU_TILE * (MCC_MAX_CYL + 1));
	otl = (uint8_t *) malloc(MCC_GPU_TILE * (MCC_MAX_CYL + 1));
	otl2 = (uint8_t *) malloc(MCC_GPU_TILE * (MCC_MAX_CYL + 1));
	hss = (uint32_t *) malloc(sizeof(uint32_t) * ((size_t) (n_rc - rc0) + 1));
	if (!hlo || !hhi || !hmeta || !htile || !hnc || !hal || !ord || !ord2 || !otl || !otl2 || !hss)
	{
		rc = mcc_gpu_err(err, MCC_GPU_OOM, "out of host memory");
		goto fail;
	}
	memset(hlo, 0, 16 * (ncyl_new + 1));
	memset(hhi, 0, 16 * (ncyl_new + 1));
	c = 0;
	for (uint32_t t = t0; t < n_tiles; t++)
	{
		uint32_t	k0 = t * MCC_GPU_TILE;
		uint32_t	k1 = n_tpl < k0 + MCC_GPU_TILE ? n_tpl : k0 + MCC_GPU_TILE;
		uint32_t	pos[257];
		uint32_t	nc = 0;

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
				{
					rc = mcc_gpu_err(err, MCC_GPU_INVALID,
									 "gallery cylinder %u has bits beyond the profile's 255 or a wrong popcount", j);
					goto fail;
				}
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

				ord2[d] = ord[i];
				otl2[d] = otl[i];
			}
			memcpy(ord + w0, ord2 + w0, 4 * (size_t) (w1 - w0));
			memcpy(otl + w0, otl2 + w0, w1 - w0);
		}
		for (uint32_t i = 0; i < nc; i++)
		{
			uint32_t	j = ord[i];
			uint32_t	d = c + i;
			uint64_t	w0 = s->bits[0 * (size_t) s->cap_cyl + j];
			uint64_t	w1 = s->bits[1 * (size_t) s->cap_cyl + j];
			uint64_t	w2 = s->bits[2 * (size_t) s->cap_cyl + j];
			uint64_t	w3 = s->bits[3 * (size_t) s->cap_cyl + j];
			uint32_t	pc = s->pc[j];

			hlo[d] = make_uint4((uint32_t) w0, (uint32_t) (w0 >> 32), (uint32_t) w1, (uint32_t) (w1 >> 32));
			hhi[d] = make_uint4((uint32_t) w2, (uint32_t) (w2 >> 32), (uint32_t) w3, (uint32_t) (w3 >> 32));
			hmeta[d] = s->angle[j] | (uint32_t) otl[i] << 8 | pc << 16 | 1u << 31;
			/* the slot of the template's stored cylinder j - first, for refinement */
			hss[p->h_tcoff[k0 + otl[i]] - rc0 + (j - s->first[p->gidx[k0 + otl[i]]])] = c0 + d;
			if (pc == 0)
				p->has_zero = 1;
			if (k0 + otl[i] >= p->n_tpl)
				p->angle_count[s->angle[j]] += 1;
		}
		htile[t - t0] = make_uint2(c0 + c, nc | (k1 - k0) << 16);
		p->tile_off[t] = c0 + c;
		c += (nc + 31) & ~31u;
	}
	for (uint32_t i = 0; i < cnt; i++)
	{
		uint32_t	gi = gl[i];

		hnc[i] = (uint16_t) (s->first[gi + 1] - s->first[gi]);
		hal[i] = 1;
	}

	/* upload the changed part */
	CK(cudaMemcpy(p->lo + c0, hlo, 16 * ncyl_new, cudaMemcpyHostToDevice), "gallery upload");
	CK(cudaMemcpy(p->hi + c0, hhi, 16 * ncyl_new, cudaMemcpyHostToDevice), "gallery upload");
	CK(cudaMemcpy(p->meta + c0, hmeta, 4 * ncyl_new, cudaMemcpyHostToDevice), "gallery upload");
	CK(cudaMemcpy(p->tiles + t0, htile, 8 * (size_t) (n_tiles - t0), cudaMemcpyHostToDevice), "gallery upload");
	CK(cudaMemcpy(p->tncyl + p->n_tpl, hnc, 2 * (size_t) cnt, cudaMemcpyHostToDevice), "gallery upload");
	CK(cudaMemcpy(p->alive + p->n_tpl, hal, cnt, cudaMemcpyHostToDevice), "gallery upload");
	CK(cudaMemcpy(p->tcoff + p->n_tpl, p->h_tcoff + p->n_tpl, 4 * ((size_t) cnt + 1), cudaMemcpyHostToDevice),
	   "gallery upload");
	if (n_rc > rc0)
		CK(cudaMemcpy(p->sslot + rc0, hss, 4 * (size_t) (n_rc - rc0), cudaMemcpyHostToDevice), "gallery upload");
	for (uint32_t i = 0; i < cnt; i++)
	{
		g->where[gl[i]] = (uint8_t) (p - g->part);
		g->local[gl[i]] = p->n_tpl + i;
	}
	p->n_tpl = n_tpl;
	p->n_tiles = n_tiles;
	p->n_cyl = c0 + (uint32_t) ncyl_new;
	p->tile_off[n_tiles] = p->n_cyl;
	p->n_rc = n_rc;

fail:
	free(hss);
	free(ord);
	free(ord2);
	free(otl);
	free(otl2);
	free(hlo);
	free(hhi);
	free(hmeta);
	free(htile);
	free(hnc);
	free(hal);
	return rc;
}

/* Record ids and flags of gallery templates [t0, t1). */
static mcc_gpu_code
map_add(mcc_gpu *g, const mcc_soa *s, uint32_t t0, uint32_t t1, mcc_error *err)
{
	if (!map_reserve(g, t1))
		return mcc_gpu_err(err, MCC_GPU_OOM, "out of host memory");
	for (uint32_t i = t0; i < t1; i++)
	{
		g->ids[i] = s->id[i];
		g->removed[i] = 0;
		g->refd[i] = 0;
		g->where[i] = 0;
		g->local[i] = 0;
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
	if ((rc = map_add(g, s, 0, s->n_tpl, err)) != MCC_GPU_OK)
		return rc;
	gl = (uint32_t *) malloc(sizeof(uint32_t) * (s->n_tpl + 1));
	if (!gl)
		return mcc_gpu_err(err, MCC_GPU_OOM, "out of host memory");
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
		return mcc_gpu_err(err, MCC_GPU_INVALID,
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
		mcc_gpu_err(err, rc, "out of host memory");
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

	if (g->broken)
		return mcc_gpu_err(err, MCC_GPU_STICKY, "%s", g->broken_msg);
	if (index >= g->n_tpl)
		return mcc_gpu_err(err, MCC_GPU_INVALID, "template index %u is out of range (%u templates)",
						   index, g->n_tpl);
	if (g->removed[index])
		return MCC_GPU_OK;
	p = &g->part[g->where[index]];
	if ((e = cudaSetDevice(p->dev)) != cudaSuccess ||
		(e = cudaMemsetAsync(p->alive + g->local[index], 0, 1, p->st)) != cudaSuccess ||
		(e = cudaStreamSynchronize(p->st)) != cudaSuccess)
		return mcc_gpu_fail(g, e, "template removal", p->dev, err);
	g->removed[index] = 1;
	return MCC_GPU_OK;
}
