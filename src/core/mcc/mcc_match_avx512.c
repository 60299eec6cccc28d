/*
 * mcc_match_avx512.c: the matrix pass and the relaxation of mcc_match.h
 * with AVX-512 (F, BW, VL, VPOPCNTDQ: the gallery scan's set, so both
 * switch on together), 8 lanes. Same bits as the scalar kernels of
 * mcc_match.c and mcc_relax.c (mcc_relax_kernel.h says how).
 *
 * The matrix: for each cylinder r of A, 8 cylinders c of B at a time (B's
 * bits are word-major): 64-bit VPOPCNTQ of the XORs (and, with masks, of
 * the masked words), LUT_sqrt by a gather, the angular gate and den in
 * 32-bit lanes, then
 *   Gamma = 1 - (float) LUT_sqrt[x] / (float) den
 * as in the scalar code (exact integers below 2^24 converted, one correctly
 * rounded float division), and the LSS vote d = (LUT_sqrt[x] rcp(den)) >> 32
 * in double precision, exactly: den is 0 or at least LUT_sqrt[1] = 4096 and
 * below 2^19, so rcp(den) = floor(2^38 / den) < 2^27; the correctly rounded
 * quotient truncates to it or to it + 1 (the quotient is never within
 * rounding of an integer from below by more than one unit), and the product
 * q den > 2^38 test, exact below 2^53, takes the 1 back; LUT_sqrt[x] q < 2^45
 * is exact too, and scaling by 2^-32 and truncating is the shift.
 */
#include <immintrin.h>
#include <string.h>

#include "mcc_match_int.h"
#include "mcc_probe_int.h"

#define AVX512_TARGET "avx512f,avx512bw,avx512vl,avx512vpopcntdq,popcnt"
#define ATTR __attribute__((target(AVX512_TARGET)))

/* ------------------------------------------------------------------ */
/* the matrix                                                          */

/* The gate |int8(qa - qb)| <= delta of 8 lanes. */
ATTR static inline __mmask8
gate8(__m256i qa, const uint8_t *qb, __m256i delta)
{
	__m256i		d = _mm256_sub_epi32(qa, _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *) qb)));

	/* int8 of the low byte: (d & 255) ^ 128, minus 128 */
	d = _mm256_sub_epi32(_mm256_xor_si256(_mm256_and_si256(d, _mm256_set1_epi32(255)),
										  _mm256_set1_epi32(128)), _mm256_set1_epi32(128));
	return _mm256_cmple_epi32_mask(_mm256_abs_epi32(d), delta);
}

/* Gamma and the votes of 8 entries from LUT_sqrt[x] and den, where ok. */
ATTR static inline void
finish8(__m256i sx, __m256i den, __mmask8 ok, float *g, uint8_t *vote)
{
	const __m512d two38 = _mm512_set1_pd(274877906944.0);	/* 2^38 = w 2^32 */
	__m512d		dd = _mm512_cvtepi32_pd(den);
	__m512d		q;
	__m256i		d;

	ok &= _mm256_cmpneq_epi32_mask(den, _mm256_setzero_si256());
	_mm256_storeu_ps(g, _mm256_maskz_mov_ps(ok, _mm256_sub_ps(_mm256_set1_ps(1.0f),
															   _mm256_div_ps(_mm256_cvtepi32_ps(sx), _mm256_cvtepi32_ps(den)))));
	q = _mm512_roundscale_pd(_mm512_div_pd(two38, dd), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
	q = _mm512_mask_sub_pd(q, _mm512_cmp_pd_mask(_mm512_mul_pd(q, dd), two38, _CMP_GT_OQ),
						   q, _mm512_set1_pd(1.0));
	q = _mm512_mul_pd(_mm512_mul_pd(_mm512_cvtepi32_pd(sx), q), _mm512_set1_pd(1.0 / 4294967296.0));
	d = _mm512_cvttpd_epi32(q);
	d = _mm256_mask_min_epi32(_mm256_set1_epi32(MCC_W), ok, d, _mm256_set1_epi32(MCC_W));
	_mm_storel_epi64((__m128i *) vote, _mm256_cvtepi32_epi8(d));
}

void
ATTR
mcc_matrix_avx512(mcc_match_work *w)
{
	const mcc_profile *p = w->profile;
	const match_side *a = &w->a;
	const match_side *b = &w->b;
	int			vw = p->words;
	int			nb = b->n;
	const __m256i delta = _mm256_set1_epi32(p->delta_theta);
	const int  *sqrt_tab = (const int *) mcc_lss_sqrt_tab;

	for (int r = 0; r < a->n; r++)
	{
		float	   *row = w->gamma + (size_t) r * nb;
		uint8_t    *vrow = w->vote + (size_t) r * nb;
		__m256i		qa = _mm256_set1_epi32(a->angle[r]);

		for (int c0 = 0; c0 < nb; c0 += 8)
		{
			__mmask8	ok = gate8(qa, b->angle + c0, delta);
			__m512i		x = _mm512_setzero_si512();
			__m256i		den;

			if (!p->masks)
			{
				for (int k = 0; k < vw; k++)
					x = _mm512_add_epi64(x, _mm512_popcnt_epi64(_mm512_xor_si512(
								_mm512_set1_epi64((long long) a->bits[k][r]),
								_mm512_loadu_si512(b->bits[k] + c0))));
				den = _mm256_add_epi32(_mm256_set1_epi32((int) a->eta[r]),
									   _mm256_loadu_si256((const __m256i *) (b->eta + c0)));
			}
			else
			{
				__m512i		pw = _mm512_setzero_si512();
				__m512i		pa = _mm512_setzero_si512();
				__m512i		pb = _mm512_setzero_si512();

				for (int k = 0; k < vw; k++)
				{
					__m512i		va = _mm512_set1_epi64((long long) a->bits[k][r]);
					__m512i		vb = _mm512_loadu_si512(b->bits[k] + c0);
					__m512i		m = _mm512_and_si512(_mm512_set1_epi64((long long) a->bits[vw + k][r]),
													 _mm512_loadu_si512(b->bits[vw + k] + c0));

					pw = _mm512_add_epi64(pw, _mm512_popcnt_epi64(m));
					pa = _mm512_add_epi64(pa, _mm512_popcnt_epi64(_mm512_and_si512(va, m)));
					pb = _mm512_add_epi64(pb, _mm512_popcnt_epi64(_mm512_and_si512(vb, m)));
					x = _mm512_add_epi64(x, _mm512_popcnt_epi64(_mm512_and_si512(_mm512_xor_si512(va, vb), m)));
				}
				ok &= _mm256_cmpge_epi32_mask(_mm512_cvtepi64_epi32(pw), _mm256_set1_epi32(p->min_me_cells));
				den = _mm256_add_epi32(_mm256_i32gather_epi32(sqrt_tab, _mm512_cvtepi64_epi32(pa), 4),
									   _mm256_i32gather_epi32(sqrt_tab, _mm512_cvtepi64_epi32(pb), 4));
			}
			finish8(_mm256_i32gather_epi32(sqrt_tab, _mm512_cvtepi64_epi32(x), 4), den, ok,
					row + c0, vrow + c0);
		}
	}
}

/* ------------------------------------------------------------------ */
/* ranking                                                             */

/* Lanes i0..i0+15 below n, as a mask. */
ATTR static inline __mmask16
below16(int i0, int n)
{
	int			k = n - i0;

	return k >= 16 ? (__mmask16) 0xFFFF : k <= 0 ? (__mmask16) 0 : (__mmask16) ((1u << k) - 1);
}

int
ATTR
mcc_argmax_avx512(const float *v, int n, const uint64_t *set, int32_t *max)
{
	__m512i		m = _mm512_setzero_si512();
	__m512i		mv;
	int32_t		g;

	for (int i0 = 0; i0 < n; i0 += 16)
	{
		__mmask16	k = below16(i0, n) & (__mmask16) (set[i0 / 64] >> (i0 % 64));

		m = _mm512_max_epi32(m, _mm512_maskz_loadu_epi32(k, v + i0));
	}
	g = _mm512_reduce_max_epi32(m);
	*max = g;
	if (g <= 0)
		return -1;
	mv = _mm512_set1_epi32(g);
	for (int i0 = 0;; i0 += 16)
	{
		__mmask16	k = below16(i0, n) & (__mmask16) (set[i0 / 64] >> (i0 % 64));
		__mmask16	e = _mm512_mask_cmpeq_epi32_mask(k, _mm512_maskz_loadu_epi32(k, v + i0), mv);

		if (e)
			return i0 + __builtin_ctz(e);
	}
}

uint64_t
ATTR
mcc_ge64_avx512(const float *v, int n, int32_t thr)
{
	__m512i		t = _mm512_set1_epi32(thr);
	uint64_t	m = 0;

	for (int i0 = 0; i0 < 64 && i0 < n; i0 += 16)
	{
		__mmask16	k = below16(i0, n);

		m |= (uint64_t) _mm512_mask_cmpge_epi32_mask(k, _mm512_maskz_loadu_epi32(k, v + i0), t) << i0;
	}
	return m;
}

/* ------------------------------------------------------------------ */
/* the relaxation                                                      */

#define L			8
#define VD			__m512d
#define VM			__mmask8
#define VI			__m256i
#define RELAX_FN	mcc_relax_avx512
#define vd_load		_mm512_loadu_pd
#define vd_store	_mm512_storeu_pd
#define vd_set1		_mm512_set1_pd
#define vd_add		_mm512_add_pd
#define vd_sub		_mm512_sub_pd
#define vd_mul		_mm512_mul_pd
#define vd_div		_mm512_div_pd
#define vd_sqrt		_mm512_sqrt_pd
#define vd_abs		_mm512_abs_pd
#define vm_lt(a, b)	_mm512_cmp_pd_mask((a), (b), _CMP_LT_OQ)
#define vm_gt(a, b)	_mm512_cmp_pd_mask((a), (b), _CMP_GT_OQ)
#define vm_eq(a, b)	_mm512_cmp_pd_mask((a), (b), _CMP_EQ_OQ)
#define vd_sel(m, a, b) _mm512_mask_blend_pd((m), (b), (a))
#define vd_iota(t0)	_mm512_add_pd(_mm512_set1_pd((double) (t0)), \
							  _mm512_setr_pd(0, 1, 2, 3, 4, 5, 6, 7))
#define vi_trunc	_mm512_cvttpd_epi32
#define vd_from_vi	_mm512_cvtepi32_pd

/*
 * z[i] and z[i + 1] of 8 lanes: one 64-bit load of the two floats per lane.
 * Eight loads and inserts ran faster than one VPGATHERDQ on the dev VM's
 * AMD Zen 5 (3.5 against 4.9 ns each in a loop of them).
 */
ATTR static inline void
gather_pair(const float *z, __m256i i, __m512d *lo, __m512d *hi)
{
	int32_t		ix[8];
	__m128i		q[4];
	__m512i		v;

	_mm256_storeu_si256((__m256i *) ix, i);
	for (int j = 0; j < 4; j++)
	{
		long long	a;
		long long	b;

		memcpy(&a, z + ix[2 * j], 8);
		memcpy(&b, z + ix[2 * j + 1], 8);
		q[j] = _mm_set_epi64x(b, a);
	}
	v = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_inserti128_si256(_mm256_castsi128_si256(q[0]), q[1], 1)),
						   _mm256_inserti128_si256(_mm256_castsi128_si256(q[2]), q[3], 1), 1);

	*lo = _mm512_cvtps_pd(_mm256_castsi256_ps(_mm512_cvtepi64_epi32(v)));
	*hi = _mm512_cvtps_pd(_mm256_castsi256_ps(_mm512_cvtepi64_epi32(_mm512_srli_epi64(v, 32))));
}

#include "mcc_relax_kernel.h"
