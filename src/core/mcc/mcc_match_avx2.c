/*
 * mcc_match_avx2.c: the matrix pass and the relaxation of mcc_match.h with
 * AVX2, 4 lanes, for x86-64 CPUs without AVX-512 (the arithmetic and its
 * exactness: mcc_match_avx512.c and mcc_relax_kernel.h). Popcounts come
 * from a 16-entry nibble table by VPSHUFB, byte counts added over the words
 * (at most 8 per word and byte, 160 for 20 words) and summed per 64-bit
 * lane by VPSADBW, as in the gallery scan (mcc_soa_avx2.c).
 */
#include <immintrin.h>
#include <string.h>

#include "mcc_avx2_popcount.h"
#include "mcc_match_int.h"
#include "mcc_probe_int.h"

#define AVX2_TARGET "avx2,popcnt"
#define ATTR __attribute__((target(AVX2_TARGET)))

/* ------------------------------------------------------------------ */
/* the matrix                                                          */

/* The four 64-bit lanes' counts (from byte counts) as 4 int32. */
ATTR static inline __m128i
lane_counts(__m256i bytes)
{
	__m256i		q = _mm256_sad_epu8(bytes, _mm256_setzero_si256());

	return _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(q, _mm256_setr_epi32(0, 2, 4, 6, 0, 0, 0, 0)));
}

/* The gate |int8(qa - qb)| <= delta of 4 lanes, as all-ones lanes. */
ATTR static inline __m128i
gate4(__m128i qa, const uint8_t *qb, int delta)
{
	uint32_t	b4;
	__m128i		d;

	memcpy(&b4, qb, sizeof(b4));
	d = _mm_sub_epi32(qa, _mm_cvtepu8_epi32(_mm_cvtsi32_si128((int) b4)));
	d = _mm_sub_epi32(_mm_xor_si128(_mm_and_si128(d, _mm_set1_epi32(255)), _mm_set1_epi32(128)),
					  _mm_set1_epi32(128));
	return _mm_cmplt_epi32(_mm_abs_epi32(d), _mm_set1_epi32(delta + 1));
}

/* Gamma and the votes of 4 entries from LUT_sqrt[x] and den, where ok. */
ATTR static inline void
finish4(__m128i sx, __m128i den, __m128i ok, float *g, uint8_t *vote)
{
	const __m256d two38 = _mm256_set1_pd(274877906944.0);	/* 2^38 = w 2^32 */
	const __m128i none = _mm_set1_epi32(MCC_W);
	__m256d		dd = _mm256_cvtepi32_pd(den);
	__m256d		q;
	__m128i		d;
	uint32_t	v4;

	ok = _mm_andnot_si128(_mm_cmpeq_epi32(den, _mm_setzero_si128()), ok);
	_mm_storeu_ps(g, _mm_and_ps(_mm_castsi128_ps(ok),
								_mm_sub_ps(_mm_set1_ps(1.0f),
										   _mm_div_ps(_mm_cvtepi32_ps(sx), _mm_cvtepi32_ps(den)))));
	q = _mm256_round_pd(_mm256_div_pd(two38, dd), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
	q = _mm256_sub_pd(q, _mm256_and_pd(_mm256_cmp_pd(_mm256_mul_pd(q, dd), two38, _CMP_GT_OQ),
									   _mm256_set1_pd(1.0)));
	q = _mm256_mul_pd(_mm256_mul_pd(_mm256_cvtepi32_pd(sx), q), _mm256_set1_pd(1.0 / 4294967296.0));
	d = _mm_blendv_epi8(none, _mm_min_epi32(_mm256_cvttpd_epi32(q), none), ok);
	v4 = (uint32_t) _mm_cvtsi128_si32(_mm_packus_epi16(_mm_packus_epi32(d, d), d));
	memcpy(vote, &v4, sizeof(v4));
}

void
ATTR
mcc_matrix_avx2(mcc_match_work *w)
{
	const mcc_profile *p = w->profile;
	const match_side *a = &w->a;
	const match_side *b = &w->b;
	int			vw = p->words;
	int			nb = b->n;
	const int  *sqrt_tab = (const int *) mcc_lss_sqrt_tab;

	for (int r = 0; r < a->n; r++)
	{
		float	   *row = w->gamma + (size_t) r * nb;
		uint8_t    *vrow = w->vote + (size_t) r * nb;
		__m128i		qa = _mm_set1_epi32(a->angle[r]);

		for (int c0 = 0; c0 < nb; c0 += 4)
		{
			__m128i		ok = gate4(qa, b->angle + c0, p->delta_theta);
			__m256i		x = _mm256_setzero_si256();
			__m128i		den;

			if (!p->masks)
			{
				for (int k = 0; k < vw; k++)
					x = _mm256_add_epi8(x, mcc_avx2_byte_popcount(_mm256_xor_si256(
								_mm256_set1_epi64x((long long) a->bits[k][r]),
								_mm256_loadu_si256((const __m256i *) (b->bits[k] + c0)))));
				den = _mm_add_epi32(_mm_set1_epi32((int) a->eta[r]),
									_mm_loadu_si128((const __m128i *) (b->eta + c0)));
			}
			else
			{
				__m256i		pw = _mm256_setzero_si256();
				__m256i		pa = _mm256_setzero_si256();
				__m256i		pb = _mm256_setzero_si256();

				for (int k = 0; k < vw; k++)
				{
					__m256i		va = _mm256_set1_epi64x((long long) a->bits[k][r]);
					__m256i		vb = _mm256_loadu_si256((const __m256i *) (b->bits[k] + c0));
					__m256i		m = _mm256_and_si256(_mm256_set1_epi64x((long long) a->bits[vw + k][r]),
													 _mm256_loadu_si256((const __m256i *) (b->bits[vw + k] + c0)));

					pw = _mm256_add_epi8(pw, mcc_avx2_byte_popcount(m));
					pa = _mm256_add_epi8(pa, mcc_avx2_byte_popcount(_mm256_and_si256(va, m)));
					pb = _mm256_add_epi8(pb, mcc_avx2_byte_popcount(_mm256_and_si256(vb, m)));
					x = _mm256_add_epi8(x, mcc_avx2_byte_popcount(_mm256_and_si256(_mm256_xor_si256(va, vb), m)));
				}
				ok = _mm_andnot_si128(_mm_cmplt_epi32(lane_counts(pw), _mm_set1_epi32(p->min_me_cells)), ok);
				den = _mm_add_epi32(_mm_i32gather_epi32(sqrt_tab, lane_counts(pa), 4),
									_mm_i32gather_epi32(sqrt_tab, lane_counts(pb), 4));
			}
			finish4(_mm_i32gather_epi32(sqrt_tab, lane_counts(x), 4), den, ok, row + c0, vrow + c0);
		}
	}
}

/* ------------------------------------------------------------------ */
/* ranking                                                             */

/* Lanes i0..i0+7 below n, as all-ones lanes. */
ATTR static inline __m256i
below8(int i0, int n)
{
	return _mm256_cmpgt_epi32(_mm256_set1_epi32(n - i0), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Bits 0..7 of b as all-ones lanes. */
ATTR static inline __m256i
bits8(unsigned b)
{
	const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);

	return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int) b), bit), bit);
}

/* The lanes of set bits i0..i0+7 below n, as all-ones lanes. */
ATTR static inline __m256i
lanes8(int i0, int n, const uint64_t *set)
{
	return _mm256_and_si256(below8(i0, n), bits8((unsigned) (set[i0 / 64] >> (i0 % 64)) & 0xFF));
}

int
ATTR
mcc_argmax_avx2(const float *v, int n, const uint64_t *set, int32_t *max)
{
	__m256i		m = _mm256_setzero_si256();
	__m256i		mv;
	__m128i		h;
	int32_t		g;

	for (int i0 = 0; i0 < n; i0 += 8)
	{
		__m256i		k = lanes8(i0, n, set);

		m = _mm256_max_epi32(m, _mm256_maskload_epi32((const int *) v + i0, k));
	}
	h = _mm_max_epi32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
	h = _mm_max_epi32(h, _mm_shuffle_epi32(h, _MM_SHUFFLE(1, 0, 3, 2)));
	h = _mm_max_epi32(h, _mm_shuffle_epi32(h, _MM_SHUFFLE(2, 3, 0, 1)));
	g = _mm_cvtsi128_si32(h);
	*max = g;
	if (g <= 0)
		return -1;
	mv = _mm256_set1_epi32(g);
	for (int i0 = 0;; i0 += 8)
	{
		__m256i		k = lanes8(i0, n, set);
		int			e = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_and_si256(k,
													_mm256_cmpeq_epi32(_mm256_maskload_epi32((const int *) v + i0, k), mv))));

		if (e)
			return i0 + __builtin_ctz((unsigned) e);
	}
}

uint64_t
ATTR
mcc_ge64_avx2(const float *v, int n, int32_t thr)
{
	__m256i		t = _mm256_set1_epi32(thr - 1);
	uint64_t	m = 0;

	for (int i0 = 0; i0 < 64 && i0 < n; i0 += 8)
	{
		__m256i		k = below8(i0, n);
		__m256i		ge = _mm256_and_si256(k, _mm256_cmpgt_epi32(_mm256_maskload_epi32((const int *) v + i0, k), t));

		m |= (uint64_t) (uint32_t) _mm256_movemask_ps(_mm256_castsi256_ps(ge)) << i0;
	}
	return m;
}

/* ------------------------------------------------------------------ */
/* the relaxation                                                      */

#define L			4
#define VD			__m256d
#define VM			__m256d
#define VI			__m128i
#define RELAX_FN	mcc_relax_avx2
#define vd_load		_mm256_loadu_pd
#define vd_store	_mm256_storeu_pd
#define vd_set1		_mm256_set1_pd
#define vd_add		_mm256_add_pd
#define vd_sub		_mm256_sub_pd
#define vd_mul		_mm256_mul_pd
#define vd_div		_mm256_div_pd
#define vd_sqrt		_mm256_sqrt_pd
#define vd_abs(v)	_mm256_andnot_pd(_mm256_set1_pd(-0.0), (v))
#define vm_lt(a, b)	_mm256_cmp_pd((a), (b), _CMP_LT_OQ)
#define vm_gt(a, b)	_mm256_cmp_pd((a), (b), _CMP_GT_OQ)
#define vm_eq(a, b)	_mm256_cmp_pd((a), (b), _CMP_EQ_OQ)
#define vd_sel(m, a, b) _mm256_blendv_pd((b), (a), (m))
#define vd_iota(t0)	_mm256_add_pd(_mm256_set1_pd((double) (t0)), _mm256_setr_pd(0, 1, 2, 3))
#define vi_trunc	_mm256_cvttpd_epi32
#define vd_from_vi	_mm256_cvtepi32_pd

/* z[i] and z[i + 1] of 4 lanes: one 64-bit gather of the two floats. */
ATTR static inline void
gather_pair(const float *z, __m128i i, __m256d *lo, __m256d *hi)
{
	__m256i		v = _mm256_i32gather_epi64((const long long *) z, i, 4);

	/* [lo0 hi0 lo1 hi1 ...] -> [lo0 lo1 lo2 lo3 hi0 hi1 hi2 hi3] */
	v = _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
	*lo = _mm256_cvtps_pd(_mm_castsi128_ps(_mm256_castsi256_si128(v)));
	*hi = _mm256_cvtps_pd(_mm_castsi128_ps(_mm256_extracti128_si256(v, 1)));
}

#include "mcc_relax_kernel.h"
