/*
 * mcc_gpu_match.cu: the match kernels, paper 000's ComputeLMC + Step-1 +
 * Step-2 fused for Hopper (measurements: docs/gpu-notes.md).
 *
 * Work item = (tile of 32 templates, probe), handed out by an atomic
 * counter to persistent warps ("warp tile") or blocks ("block tile"). The
 * tile's 32 x 65 bucket histograms stay in shared memory (no global
 * B[N][w]; perf-notes §2.2). The tile's cylinders are in angle order, so a
 * group of them shares one contiguous range of probe cylinders: LUT_theta
 * is the probe sorted by angle and stored three times over, so that the
 * range never wraps, and every probe read is a shared-memory broadcast;
 * each cylinder masks the entries outside its own gate. Step-2 runs in the
 * same kernel, one lane per template of the tile, and adds each score to a
 * coarse histogram for the top-k selection.
 *
 * Per local similarity: the popcount of the XOR (8 POPC, fewer with
 * carry-save adders, or from binary tensor-core MMA: popc(a xor b) =
 * pc(a) + pc(b) - 2 popc(a and b)), LUT_sqrt, rcp(den), d = umulhi(sqrt_fx,
 * rcp), one shared atomic. rcp(den) = floor(2^38 / den) is read from a
 * per-probe table in shared memory or computed exactly with FP64 Newton
 * steps (the FP64 pipe is otherwise idle, while MUFU shares POPC's pipe).
 */
#include "mcc_gpu_int.h"

#define FULL 0xffffffffu

/*
 * Exact floor(2^38 / den) for 1 <= den <= 2^17: a seed from the exponent
 * bits, four Newton steps (error < 1e-15), then floor(2^38 g + 2^-20) by a
 * round-down add. The 2^-20 lifts the exact quotients of powers of two above
 * the integer; every other quotient is at least 1/den > 7.6e-6 away from an
 * integer. Checked against integer division for every den up to 2^17
 * (test/gpu/gpu_check.c, rcp test).
 */
__device__ __forceinline__ uint32_t
rcp_fp64(double den)
{
	double		g = __hiloint2double(0x7FDE6238 - __double2hiint(den), 0);

#pragma unroll
	for (int k = 0; k < 4; k++)
	{
		double		r = fma(-den, g, 1.0);

		g = fma(g, r, g);
	}
	return (uint32_t) __double2loint(__dadd_rd(fma(0x1p38, g, 0x1p-20), 0x1p52));
}

/* Carry-save adder: a + b + c = s + 2 c'. */
__device__ __forceinline__ void
csa(uint32_t a, uint32_t b, uint32_t c, uint32_t &s, uint32_t &cy)
{
	s = a ^ b ^ c;
	cy = (a & b) | (c & (a ^ b));
}

/*
 * Work item item of a pass: its tile t (the tile's first cylinder off in
 * the gallery, its ncyl cylinders and ntpl templates) and its probe q.
 */
__device__ __forceinline__ void
item_tile(const mcc_match_args &a, uint32_t item, uint32_t &t, uint32_t &q, uint32_t &off, uint32_t &ncyl,
		  uint32_t &ntpl)
{
	uint2		ti;

	t = item / a.nq;
	q = item - t * a.nq;
	ti = a.tiles[t];
	off = ti.x;
	ncyl = ti.y & 0xffff;
	ntpl = ti.y >> 16;
}

/* popcount of (x,y) xor (p0,p1): 256 bits in 8 words. */
template <int CSA>
__device__ __forceinline__ uint32_t
popc_xor(const uint4 &x, const uint4 &y, const uint4 &p0, const uint4 &p1)
{
	uint32_t	w0 = x.x ^ p0.x, w1 = x.y ^ p0.y, w2 = x.z ^ p0.z, w3 = x.w ^ p0.w;
	uint32_t	w4 = y.x ^ p1.x, w5 = y.y ^ p1.y, w6 = y.z ^ p1.z, w7 = y.w ^ p1.w;

	if (CSA == 0)
		return __popc(w0) + __popc(w1) + __popc(w2) + __popc(w3) +
			__popc(w4) + __popc(w5) + __popc(w6) + __popc(w7);
	else if (CSA == 2)
	{
		uint32_t	s1, c1, s2, c2;

		csa(w0, w1, w2, s1, c1);
		csa(w3, w4, w5, s2, c2);
		return __popc(s1) + __popc(s2) + __popc(w6) + __popc(w7) +
			2 * (__popc(c1) + __popc(c2));
	}
	else
	{
		uint32_t	s1, c1, s2, c2, s3, c3, t, f;

		csa(w0, w1, w2, s1, c1);
		csa(w3, w4, w5, s2, c2);
		csa(s1, s2, w6, s3, c3);
		csa(c1, c2, c3, t, f);
		return __popc(s3) + __popc(w7) + 2 * __popc(t) + 4 * __popc(f);
	}
}

/*
 * Step-2 for one lane's template lt of the tile (paper 000 Fig. 9): its
 * score from its distance histogram row, stored for probe q, and the row
 * cleared for the next item. A dead template stores sc unchanged (-1).
 * Both kernels' Step-2; inlined, so each compiles as if written in place.
 */
__device__ __forceinline__ float
step2_score(const mcc_match_args &a, const uint8_t *s_lutp, uint32_t *row, uint32_t q,
			uint32_t lt, uint32_t n, float sc)
{
	uint32_t	nc = a.tncyl[lt];
	uint32_t	mn = min(nc, n);

	if (a.alive[lt])
	{
		int			np = mn ? s_lutp[mn] : 0;

		if (np == 0)
			sc = 0.0f;
		else
		{
			int			left = np, sum = 0;

			for (int i = 0; i < 64 && left > 0; i++)
			{
				int			c = min((int) row[i], left);

				sum += c * i;
				left -= c;
			}
			sum += left * 64;
			sc = mcc_lss_from_sum(np, (uint32_t) sum);
		}
	}
	a.scores[(size_t) q * a.score_stride + lt] = sc;
	for (int i = 0; i < 64; i++)
		row[i] = 0;
	return sc;
}

/*
 * Add the warp's scores (lanes below ntpl, dead templates left out) to the
 * coarse score histogram of probe q: one atomic per distinct bin. The lane
 * is read here rather than passed: so the kernels compile to the very same
 * code as with these lines written in place.
 */
__device__ __forceinline__ void
coarse_hist(const mcc_match_args &a, uint32_t q, uint32_t ntpl, float sc)
{
	int			lane = threadIdx.x & 31;
	bool		has = lane < ntpl && sc >= 0.0f;
	uint32_t	bin = has ? (__float_as_uint(sc) >> MCC_GPU_SC_SHIFT) : 0xffffffffu;
	uint32_t	mask = __match_any_sync(FULL, bin);

	if (has && lane == __ffs(mask) - 1)
		atomicAdd(&a.schist[(size_t) q * MCC_GPU_SC_BINS + bin], __popc(mask));
}

/*
 * The kernel. RCP: MCC_RCP_FP64 or MCC_RCP_TABLE; CSA: 2 or 4 carry-save
 * adders; ZS: exclude pairs of two empty cylinders (den = 0), needed only
 * when both the probe and the partition have one; CPL: gallery cylinders
 * per lane (1, or 2 from consecutive groups, sharing each probe read);
 * BT: the block shares one item (tile, probe) and one histogram, its warps
 * splitting the tile's groups (more warps fit an SM), instead of one item
 * and one histogram per warp.
 */
template <int RCP, int CSA, int ZS, int CPL, int BT>
__global__ void __launch_bounds__(MCC_GPU_WARPS * 32)
mcc_match(mcc_match_args a)
{
	extern __shared__ uint4 smem[];
	const int	lane = threadIdx.x & 31;
	const int	warp = threadIdx.x >> 5;
	const uint8_t *sb = (const uint8_t *) smem;
	const uint16_t *s_sqrt = (const uint16_t *) (sb + MCC_BLOB_SQRT);	/* 16 bits: half the bank conflicts */
	const double *s_E = (const double *) (sb + MCC_BLOB_E);
	const uint8_t *s_lutp = sb + MCC_BLOB_LUTP;
	const mcc_pdesc *s_pd = (const mcc_pdesc *) (sb + MCC_BLOB_PDESC);
	const uint32_t *s_words = (const uint32_t *) sb;
	uint32_t   *hist;
	uint32_t	window = 2 * a.delta + 1;
	__shared__ uint32_t s_item;

	for (uint32_t i = threadIdx.x; i < a.blob_words; i += blockDim.x)
		smem[i] = a.blob[i];
	hist = (uint32_t *) (smem + a.blob_words) + (BT ? 0 : warp * (MCC_GPU_TILE * MCC_GPU_HROW));
	for (int i = BT ? threadIdx.x : lane; i < MCC_GPU_TILE * MCC_GPU_HROW; i += BT ? blockDim.x : 32)
		hist[i] = 0;
	__syncthreads();
	if (a.fault && blockIdx.x == 0 && threadIdx.x == 0)
		*(volatile int *) (uintptr_t) 8 = 1;

	for (;;)
	{
		uint32_t	item = 0;
		uint32_t	t, q, off, ncyl, ntpl, n, lt;
		mcc_pdesc	pd;
		const uint16_t *cnt;
		const uint4 *elo, *ehi;
		const double *eE;
		const uint32_t *erow;
		float		sc = -1.0f;

		if (BT)
		{
			if (threadIdx.x == 0)
				s_item = atomicAdd(a.counter, 1u);
			__syncthreads();
			item = s_item;
		}
		else
		{
			if (lane == 0)
				item = atomicAdd(a.counter, 1u);
			item = __shfl_sync(FULL, item, 0);
		}
		if (item >= a.n_items)
			break;
		item_tile(a, item, t, q, off, ncyl, ntpl);
		pd = s_pd[q];
		n = pd.n;
		cnt = (const uint16_t *) (sb + pd.cnt_off);
		elo = (const uint4 *) (sb + pd.lo_off);
		ehi = (const uint4 *) (sb + pd.hi_off);
		eE = (const double *) (sb + pd.e_off);
		erow = (const uint32_t *) (sb + pd.row_off);

		/* Step-1: the tile's cylinders, 32 * CPL at a time (per warp) */
		for (uint32_t g = BT ? warp * 32 * CPL : 0; n > 0 && g < ncyl;
			 g += (BT ? MCC_GPU_WARPS : 1) * 32 * CPL)
		{
			uint4		x[CPL], y[CPL];
			uint32_t	s[CPL], span[CPL], hb[CPL], pcj[CPL];
			double		Ej[CPL];
			bool		zj[CPL];
			uint32_t	a0 = 0, S = 0, E = 0;

			uint32_t	m[CPL], ang[CPL];
			bool		valid[CPL];

#pragma unroll
			for (int c = 0; c < CPL; c++)
			{
				uint32_t	pos = g + 32 * c + lane;
				uint32_t	j;

				valid[c] = pos < ncyl;
				j = off + (valid[c] ? pos : lane);
				m[c] = __ldg(a.meta + j);
				x[c] = __ldg(a.lo + j);
				y[c] = __ldg(a.hi + j);
				valid[c] = valid[c] && (m[c] >> 31) != 0;
				ang[c] = m[c] & 255;
				a0 = min(c ? a0 : 255u, __reduce_min_sync(FULL, valid[c] ? ang[c] : 255u));
			}
			S = 0xffffffffu;
#pragma unroll
			for (int c = 0; c < CPL; c++)
			{
				uint32_t	L, L2, e;

				pcj[c] = (m[c] >> 16) & 511;
				hb[c] = ((m[c] >> 8) & 31) * MCC_GPU_HROW;
				/*
				 * The lane's gate window [L, L + window) in unwrapped angles,
				 * from the group's smallest angle a0 (the group is in angle
				 * order, or in popcount order inside a narrow angle range).
				 */
				L = ((a0 - a.delta) & 255) + ((valid[c] ? ang[c] : a0) - a0);
				L2 = L + window;
				s[c] = n * (L >> 8) + cnt[L & 255];
				e = n * (L2 >> 8) + cnt[L2 & 255];
				if (!valid[c])
				{
					s[c] = 0xffffffffu;
					e = 0;
				}
				span[c] = valid[c] ? e - s[c] : 0;
				S = min(S, __reduce_min_sync(FULL, s[c]));
				E = max(E, __reduce_max_sync(FULL, e));
				Ej[c] = s_E[pcj[c]];
				zj[c] = pcj[c] == 0;
			}

			{
				uint4		p0 = elo[S], p1 = ehi[S];
				double		Ei = RCP == MCC_RCP_FP64 ? eE[S] : 0.0;
				uint32_t	row = RCP == MCC_RCP_TABLE ? erow[S] : 0;

#pragma unroll 4
				for (uint32_t u = S; u < E; u++)
				{
					/* the next probe entry, read ahead (entry 3n exists in the image) */
					uint4		n0 = elo[u + 1], n1 = ehi[u + 1];
					double		nE = RCP == MCC_RCP_FP64 ? eE[u + 1] : 0.0;
					uint32_t	nrow = RCP == MCC_RCP_TABLE ? erow[u + 1] : 0;

#pragma unroll
					for (int c = 0; c < CPL; c++)
					{
						bool		act = (u - s[c]) < span[c];
						uint32_t	pop = popc_xor<CSA>(x[c], y[c], p0, p1);
						uint32_t	sf = s_sqrt[pop];
						uint32_t	R, d;

						if (RCP == MCC_RCP_FP64)
						{
							double		den = Ei + Ej[c];

							R = rcp_fp64(den);
							if (ZS)
								act = act && den != 0.0;
						}
						else
						{
							R = s_words[(row & 0xffff) + pcj[c]];
							if (ZS)
								act = act && !((row >> 31) && zj[c]);
						}
						d = __umulhi(sf, R);
						/*
						 * No branch: a lane outside its gate, or with d >= w,
						 * votes into the padding word 64 of its row, which
						 * Step-2 never reads; so the loop is straight code
						 * that the compiler can overlap across entries.
						 */
						d = act ? min(d, 64u) : 64u;
						atomicAdd(hist + hb[c] + d, 1u);
					}
					p0 = n0;
					p1 = n1;
					Ei = nE;
					row = nrow;
				}
			}
		}
		if (BT)
			__syncthreads();
		else
			__syncwarp();

		/* Step-2: one lane per template of the tile (paper 000 Fig. 9) */
		lt = t * MCC_GPU_TILE + lane;
		if (BT && warp != 0)
		{
			__syncthreads();
			continue;
		}
		if (lane < ntpl)
			sc = step2_score(a, s_lutp, hist + lane * MCC_GPU_HROW, q, lt, n, sc);
		__syncwarp();

		/* coarse score histogram, one atomic per distinct bin of the warp */
		coarse_hist(a, q, ntpl, sc);
		if (BT)
			__syncthreads();
	}
}

/* D = A * B + 0 over 256-bit rows: popc(a_row & b_col) for 16 x 8 pairs. */
__device__ __forceinline__ void
bmma_and(const uint32_t a[4], uint32_t b0, uint32_t b1, int c[4])
{
	asm volatile("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc "
				 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %10, %10, %10};\n"
				 : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
				 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(0));
}

/*
 * The tensor-core kernel: the same items, histograms and Step-2 as the
 * block-tile kernel, but the popcounts come from binary MMA (AND + POPC,
 * the only b1 operation of sm_90): popc(a xor b) = pc(a) + pc(b) -
 * 2 popc(a and b). A warp takes 16 gallery cylinders (the A rows, in angle
 * order) and walks the union of their gate ranges over the probe entries 8
 * at a time (the B columns); each lane then finishes 4 of the 128 pairs
 * with the same integer steps as the other kernels.
 *
 * Fragments of m16n8k256 (g = lane / 4, t = lane % 4): A registers hold
 * 32-bit word t (then t + 4) of rows g and g + 8; B registers word t (then
 * t + 4) of column g; C holds (g, 2t), (g, 2t + 1), (g + 8, 2t),
 * (g + 8, 2t + 1).
 *
 * RCP: MCC_RCP_FP64 or MCC_RCP_TABLE. NW: warps per block. SP: software
 * pipelining, the MMA of the next 8 entries issued before the epilogue of
 * the current ones (one spare MMA per 16 rows). LEAN (table only): the
 * same integer steps in fewer instructions per pair slot (tc-lean):
 * - per probe entry one 8-byte word {byte offset of its rcp row, 2 pc}
 *   (pd.col_off) instead of the packed row word that needs 4 shifts and
 *   masks per column;
 * - byte addresses from per-row and per-column parts: LUT_sqrt at
 *   2 pc_r + 2 pc_c - 4 c (= 2 popc(a xor b), in [0, 510]: every row read
 *   is a stored cylinder or zero padding), rcp at row + 4 pc_r, the bucket
 *   at the row's histogram + 4 d;
 * - no clamp of d: d <= 64 for every pair of popcounts and xor popcount
 *   that can occur (gpu_check checks all of them), so an inactive pair only
 *   needs its bucket moved to the padding word 64.
 * LEAN 2: the same, the chunk loop unrolled 4 times instead of 2.
 * (Tried and slower: the inactive pairs' atomics predicated off instead of
 * moved to bucket 64, -2 .. -5 %.)
 */
template <int RCP, int ZS, int NW, int SP, int LEAN>
__global__ void __launch_bounds__(NW * 32, LEAN ? 4 : 1)	/* LEAN: 4 blocks (40 warps) per SM, as the others */
mcc_match_tc(mcc_match_args a)
{
	extern __shared__ uint4 smem[];
	const int	lane = threadIdx.x & 31;
	const int	warp = threadIdx.x >> 5;
	const int	g = lane >> 2;
	const int	tq = lane & 3;
	const uint8_t *sb = (const uint8_t *) smem;
	const uint16_t *s_sqrt = (const uint16_t *) (sb + MCC_BLOB_SQRT);
	const double *s_E = (const double *) (sb + MCC_BLOB_E);
	const uint8_t *s_lutp = sb + MCC_BLOB_LUTP;
	const mcc_pdesc *s_pd = (const mcc_pdesc *) (sb + MCC_BLOB_PDESC);
	const uint32_t *s_words = (const uint32_t *) sb;
	uint32_t   *hist;
	uint32_t	window = 2 * a.delta + 1;
	__shared__ uint32_t s_item;

	for (uint32_t i = threadIdx.x; i < a.blob_words; i += blockDim.x)
		smem[i] = a.blob[i];
	hist = (uint32_t *) (smem + a.blob_words);
	for (int i = threadIdx.x; i < MCC_GPU_TILE * MCC_GPU_HROW; i += blockDim.x)
		hist[i] = 0;
	__syncthreads();
	if (a.fault && blockIdx.x == 0 && threadIdx.x == 0)
		*(volatile int *) (uintptr_t) 8 = 1;

	for (;;)
	{
		uint32_t	item, t, q, off, ncyl, ntpl, n, lt;
		mcc_pdesc	pd;
		const uint16_t *cnt;
		const uint32_t *wlo, *whi, *erow;
		const uint2 *ecol;
		const double *eE;
		float		sc = -1.0f;

		if (threadIdx.x == 0)
			s_item = atomicAdd(a.counter, 1u);
		__syncthreads();
		item = s_item;
		if (item >= a.n_items)
			break;
		item_tile(a, item, t, q, off, ncyl, ntpl);
		pd = s_pd[q];
		n = pd.n;
		cnt = (const uint16_t *) (sb + pd.cnt_off);
		wlo = (const uint32_t *) (sb + pd.lo_off);
		whi = (const uint32_t *) (sb + pd.hi_off);
		eE = (const double *) (sb + pd.e_off);
		erow = (const uint32_t *) (sb + pd.row_off);
		ecol = (const uint2 *) (sb + pd.col_off);

		/* Step-1: 16 gallery cylinders per warp at a time */
		for (uint32_t r0 = warp * 16; n > 0 && r0 < ncyl; r0 += NW * 16)
		{
			uint32_t	aw[4];
			uint32_t	m[2], s[2], span[2], pcr[2], hb[2];
			uint32_t	pcr2[2], pcr4[2];
			uint32_t   *hrow[2];
			double		Er[2];
			bool		valid[2];
			uint32_t	a0 = 255, S = 0xffffffffu, E = 0;

#pragma unroll
			for (int h = 0; h < 2; h++)
			{
				uint32_t	pos = r0 + g + 8 * h;
				uint32_t	j;

				valid[h] = pos < ncyl;
				j = off + (valid[h] ? pos : 0);
				m[h] = __ldg(a.meta + j);
				aw[h] = __ldg((const uint32_t *) (a.lo + j) + tq);
				aw[h + 2] = __ldg((const uint32_t *) (a.hi + j) + tq);
				valid[h] = valid[h] && (m[h] >> 31) != 0;
				a0 = min(a0, valid[h] ? (m[h] & 255) : 255u);
			}
			a0 = __reduce_min_sync(FULL, a0);
#pragma unroll
			for (int h = 0; h < 2; h++)
			{
				uint32_t	L = ((a0 - a.delta) & 255) + ((valid[h] ? (m[h] & 255) : a0) - a0);
				uint32_t	L2 = L + window;
				uint32_t	e = n * (L2 >> 8) + cnt[L2 & 255];

				s[h] = n * (L >> 8) + cnt[L & 255];
				if (!valid[h])
				{
					s[h] = 0xffffffffu;
					e = 0;
				}
				span[h] = valid[h] ? e - s[h] : 0;
				S = min(S, s[h]);
				E = max(E, e);
				pcr[h] = (m[h] >> 16) & 511;
				pcr2[h] = 2 * pcr[h];
				pcr4[h] = 4 * pcr[h];
				hb[h] = ((m[h] >> 8) & 31) * MCC_GPU_HROW;
				hrow[h] = hist + hb[h];
				Er[h] = s_E[pcr[h]];
			}
			S = __reduce_min_sync(FULL, S);
			E = __reduce_max_sync(FULL, E);

			int			cn[4];

			/*
			 * B: column g = probe entry u0 + g. Columns at or past E read
			 * entry E - 1 and are masked below (no lane's window reaches E).
			 */
			if (SP)
			{
				uint32_t	ub = min(S + g, E - 1);

				bmma_and(aw, wlo[4 * ub + tq], whi[4 * ub + tq], cn);
			}
			constexpr int UNR = LEAN == 2 ? 4 : 2;	/* chunks per loop trip */

#pragma unroll UNR
			for (uint32_t u0 = S; u0 < E; u0 += 8)
			{
				int			c[4];

				if (SP)
				{
					uint32_t	ub = min(u0 + 8 + g, E - 1);

#pragma unroll
					for (int i = 0; i < 4; i++)
						c[i] = cn[i];
					bmma_and(aw, wlo[4 * ub + tq], whi[4 * ub + tq], cn);
				}
				else
				{
					uint32_t	ub = min(u0 + g, E - 1);

					bmma_and(aw, wlo[4 * ub + tq], whi[4 * ub + tq], c);
				}
#pragma unroll
				for (int k = 0; k < 2; k++)
				{
					uint32_t	u = u0 + 2 * tq + k;
					uint32_t	uc = min(u, E - 1);

					if (LEAN)
					{
						uint2		cw = ecol[uc];	/* {rcp row byte offset, 2 pc} */

#pragma unroll
						for (int h = 0; h < 2; h++)
						{
							bool		act = (u - s[h]) < span[h];
							uint32_t	cc = (uint32_t) c[2 * h + k];
							uint32_t	sf = *(const uint16_t *) (sb + MCC_BLOB_SQRT + (pcr2[h] + cw.y - 4 * cc));
							uint32_t	R = *(const uint32_t *) (sb + cw.x + pcr4[h]);
							uint32_t	d = __umulhi(sf, R);

							if (ZS)
								act = act && !(cw.y == 0 && pcr[h] == 0);
							atomicAdd(hrow[h] + (act ? d : 64u), 1u);
						}
						continue;
					}

					uint32_t	cm = erow[uc];
					uint32_t	pcc = (cm >> 16) & 511;
					double		Ec = RCP == MCC_RCP_FP64 ? eE[uc] : 0.0;

#pragma unroll
					for (int h = 0; h < 2; h++)
					{
						bool		act = (u - s[h]) < span[h];
						uint32_t	pop = pcr[h] + pcc - 2 * (uint32_t) c[2 * h + k];
						uint32_t	sf = s_sqrt[pop & 255];
						uint32_t	R, d;

						if (RCP == MCC_RCP_FP64)
						{
							double		den = Ec + Er[h];

							R = rcp_fp64(den);
							if (ZS)
								act = act && den != 0.0;
						}
						else
						{
							R = s_words[(cm & 0xffff) + pcr[h]];
							if (ZS)
								act = act && !((cm >> 31) && pcr[h] == 0);
						}
						d = __umulhi(sf, R);
						d = act ? min(d, 64u) : 64u;
						atomicAdd(hist + hb[h] + d, 1u);
					}
				}
			}
		}
		__syncthreads();

		/* Step-2: warp 0, one lane per template of the tile */
		lt = t * MCC_GPU_TILE + lane;
		if (warp != 0)
		{
			__syncthreads();
			continue;
		}
		if (lane < ntpl)
			sc = step2_score(a, s_lutp, hist + lane * MCC_GPU_HROW, q, lt, n, sc);
		__syncwarp();
		coarse_hist(a, q, ntpl, sc);
		__syncthreads();
	}
}

/* Kernel parameters of a variant. */
void
mcc_gpu_variant_params(int variant, int *rcp, int *csa, int *cpl, int *bt, int *tc)
{
	/*
	 * rcp, csa, cpl, bt, tc (tensor cores: 1 = 8 warps, 2 = 8 + pipelined, 3 = 10,
	 * 4 = 10 + pipelined, 5 = 4 with the lean epilogue, 6 = 5 unrolled 4 times)
	 */
	static const int8_t v[MCC_GPU_VARIANT_COUNT][5] = {
		{1, 0, 1, 1, 5},		/* default = tc-lean, the fastest measured (docs/gpu-notes.md) */
		{0, 2, 1, 0, 0}, {0, 4, 1, 0, 0}, {1, 2, 1, 0, 0}, {1, 4, 1, 0, 0},
		{0, 2, 1, 1, 0}, {0, 4, 1, 1, 0}, {1, 2, 1, 1, 0}, {1, 4, 1, 1, 0},
		{0, 2, 2, 1, 0}, {0, 4, 2, 1, 0}, {1, 2, 2, 1, 0}, {1, 4, 2, 1, 0},
		{1, 0, 1, 1, 1}, {0, 0, 1, 1, 1}, {1, 0, 1, 1, 2}, {1, 0, 1, 1, 3}, {1, 0, 1, 1, 4},
		{1, 0, 1, 1, 5}, {1, 0, 1, 1, 6},
	};
	int			i = variant >= 0 && variant < MCC_GPU_VARIANT_COUNT ? variant : 0;

	*rcp = v[i][0];
	*csa = v[i][1];
	*cpl = v[i][2];
	*bt = v[i][3];
	*tc = v[i][4];
}

/* Threads per block of a kernel configuration. */
int
mcc_gpu_block_threads(int tc)
{
	return (tc >= 3 ? 10 : MCC_GPU_WARPS) * 32;
}

#define K2(r, c, p, b) {(const void *) mcc_match<r, c, 0, p, b>, (const void *) mcc_match<r, c, 1, p, b>}

/* Kernel function pointer of (rcp, csa, zero-safe, cpl, block tile, tensor cores). */
const void *
mcc_gpu_match_kernel(int rcp, int csa, int zs, int cpl, int bt, int tc)
{
	static const void *const k[12][2] = {
		K2(0, 2, 1, 0), K2(0, 4, 1, 0), K2(1, 2, 1, 0), K2(1, 4, 1, 0),
		K2(0, 2, 1, 1), K2(0, 4, 1, 1), K2(1, 2, 1, 1), K2(1, 4, 1, 1),
		K2(0, 2, 2, 1), K2(0, 4, 2, 1), K2(1, 2, 2, 1), K2(1, 4, 2, 1),
	};
#define KT(r, w, p, l) {(const void *) mcc_match_tc<r, 0, w, p, l>, (const void *) mcc_match_tc<r, 1, w, p, l>}
	static const void *const ktc[2][4][2] = {
		{KT(0, 8, 0, 0), KT(0, 8, 1, 0), KT(0, 10, 0, 0), KT(0, 10, 1, 0)},
		{KT(1, 8, 0, 0), KT(1, 8, 1, 0), KT(1, 10, 0, 0), KT(1, 10, 1, 0)},
	};
	static const void *const klean[2][2] = {KT(1, 10, 1, 1), KT(1, 10, 1, 2)};
	int			i = (cpl == 2 ? 8 : bt ? 4 : 0) + (rcp ? 2 : 0) + (csa == 4 ? 1 : 0);

	/* the lean epilogue reads the rcp table; without it, tc-table-w10-sp's FP64 twin */
	if (tc >= 5 && tc <= 6)
		return rcp ? klean[tc - 5][zs ? 1 : 0] : ktc[0][3][zs ? 1 : 0];
	if (tc >= 1 && tc <= 4)
		return ktc[rcp ? 1 : 0][tc - 1][zs ? 1 : 0];
	if (cpl == 2 && !bt)
		return NULL;
	return k[i][zs ? 1 : 0];
}
