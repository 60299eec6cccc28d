/*
 * mcc_relax_kernel.h: the body of the SIMD relaxation kernels, included by
 * mcc_match_avx2.c and mcc_match_avx512.c after they define
 *
 *   RELAX_FN         the kernel's name (mcc_match_int.h declares it)
 *   ATTR             its target attribute
 *   L                doubles per vector
 *   VD, VM, VI       a vector of L doubles, a mask of L lanes, L int32
 *   vd_load(p) vd_store(p, v) vd_set1(x)   unaligned memory, broadcast
 *   vd_add vd_sub vd_mul vd_div vd_sqrt vd_abs
 *                    the IEEE operations, correctly rounded per lane
 *   vm_lt vm_gt vm_eq (ordered, quiet) and vd_sel(m, a, b) (m ? a : b)
 *   vd_iota(t0)      lanes t0, t0 + 1, ... as doubles
 *   vi_trunc(v)      (int) of each lane, truncating; vd_from_vi(i) back
 *   gather_pair(z, i, &lo, &hi)
 *                    the floats z[i] and z[i + 1] of each lane, as doubles
 *
 * The arithmetic is mcc_relax_generic()'s, operation for operation: each
 * lane computes one entry as mcc_rho() of mcc_relax_hd.h does (the one
 * definition the generic kernel and the GPU's share), the conditionals as
 * blends of both sides, every sum in the scalar order; so the results are
 * the same bits. Three things differ, none in the value of anything:
 *   - lanes run over t: the kernel fills rho(t, k) for 8 (or 4) pairs t and
 *     one k, and stores the matrix transposed, rho^T[k][t] = rho(t, k), with
 *     rows of nv = n rounded up to L;
 *   - rho(t, k) and rho(k, t) come from one pass, sharing the terms that
 *     are the same bits both ways (vrho_pass, as mcc_rho_shared() of the
 *     generic kernel), for t and k in different blocks of L;
 *   - an iteration then adds, for L pairs t at once, rho(t, k) lambda(k) in
 *     the order k = 0, 1, ..., n - 1 (one lane per t: each lane's sum is
 *     the scalar sum of that t, term for term).
 * Lanes past n compute from the zero padding of relax_pairs and are never
 * read.
 */

/* mcc_tab_get() of mcc_relax_hd.h; x >= 0 or NaN. */
ATTR static inline VD
vtab_get(const mcc_sigmoid_tab *t, VD x)
{
	VM			in = vm_lt(x, vd_set1(t->hi));
	/* past the table: index MCC_SIG_SEGS (read, then replaced by the blend below) */
	VD			s = vd_sel(in, vd_mul(x, vd_set1(t->scale)), vd_set1((double) MCC_SIG_SEGS));
	VI			i = vi_trunc(s);
	VD			lo;
	VD			hi;
	VD			v;

	gather_pair(t->z, i, &lo, &hi);
	v = vd_add(lo, vd_mul(vd_sub(s, vd_from_vi(i)), vd_sub(hi, lo)));
	return vd_sel(in, v, vd_set1((double) t->z[MCC_SIG_SEGS]));
}

/* mcc_angle_term() of mcc_relax_hd.h. */
ATTR static inline VD
vangle_term(const mcc_sigmoid_tab *t, VD cosd)
{
	VD			zero = vd_set1(0.0);
	VD			h = vd_mul(vd_set1(0.5), vd_sub(vd_set1(1.0), cosd));

	h = vd_sel(vm_lt(h, zero), zero, h);
	return vtab_get(t, vd_sqrt(h));
}

/* mcc_dist_term() of mcc_relax_hd.h. */
ATTR static inline VD
vdist_term(const mcc_sigmoid_tab *t, mcc_d1_norm norm, VD da, VD db)
{
	VD			zero = vd_set1(0.0);
	VD			diff = vd_abs(vd_sub(da, db));
	VD			sum = vd_add(da, db);

	switch (norm)
	{
		case MCC_D1_SUM:
			return vtab_get(t, vd_sel(vm_gt(sum, zero), vd_div(diff, sum), zero));
		case MCC_D1_MEAN:
			return vtab_get(t, vd_sel(vm_gt(sum, zero),
									  vd_div(diff, vd_mul(vd_set1(0.5), sum)), zero));
		default:
			return vtab_get(t, diff);
	}
}

/*
 * rho(t, k) and rho(k, t) for the L pairs t = t0.. and one pair k (*tk and
 * *kt; only rho(t, k) if kt is NULL). The terms the two share are computed
 * once (mcc_rho_shared() says why they are the same bits both ways): dA,
 * dB, the distance term, the d2 term and conj(s_a) s_b, which (k, t) takes
 * negated where exactly one segment has length 0; only d3's numerator, its
 * division and its term are computed for each direction.
 */
ATTR static inline void
vrho_pass(const relax_pairs *rx, const mcc_relax_params *rp, const mcc_sigmoid_tab *tab,
		  int t0, int k, VD *tk, VD *kt)
{
	VD			zero = vd_set1(0.0);
	VD			one = vd_set1(1.0);
	VD			fxt = vd_load(rx->fx + t0);
	VD			fyt = vd_load(rx->fy + t0);
	VD			fxk = vd_set1(rx->fx[k]);
	VD			fyk = vd_set1(rx->fy[k]);
	VD			axt = vd_load(rx->ax + t0);
	VD			ayt = vd_load(rx->ay + t0);
	VD			bxt = vd_load(rx->bx + t0);
	VD			byt = vd_load(rx->by + t0);
	VD			axk = vd_set1(rx->ax[k]);
	VD			ayk = vd_set1(rx->ay[k]);
	VD			bxk = vd_set1(rx->bx[k]);
	VD			byk = vd_set1(rx->by[k]);
	/* the segments of (t, k): from t to k */
	VD			sax = vd_sub(axk, axt);
	VD			say = vd_sub(ayk, ayt);
	VD			sbx = vd_sub(bxk, bxt);
	VD			sby = vd_sub(byk, byt);
	VD			da = vd_sqrt(vd_add(vd_mul(sax, sax), vd_mul(say, say)));
	VD			db = vd_sqrt(vd_add(vd_mul(sbx, sbx), vd_mul(sby, sby)));
	VM			za = vm_eq(da, zero);
	VM			zb = vm_eq(db, zero);
	VD			dd = vd_mul(vd_sel(vm_gt(da, zero), da, one), vd_sel(vm_gt(db, zero), db, one));
	VM			diag = vm_eq(vd_iota(t0), vd_set1((double) k));
	VD			shared;
	VD			re;
	VD			im;
	VD			c3;
	VD			flip;

	/* d1 and d2 (cos of the angle of phi_t conj(phi_k)) */
	shared = vd_mul(vdist_term(&tab[0], rp->d1, da, db),
					vangle_term(&tab[1], vd_add(vd_mul(fxt, fxk), vd_mul(fyt, fyk))));
	/* d3 of (t, k): conj(s_a) s_b with zero-length segments read as (1, 0) */
	sax = vd_sel(za, one, sax);
	say = vd_sel(za, zero, say);
	sbx = vd_sel(zb, one, sbx);
	sby = vd_sel(zb, zero, sby);
	re = vd_add(vd_mul(sax, sbx), vd_mul(say, sby));
	im = vd_sub(vd_mul(sax, sby), vd_mul(say, sbx));
	c3 = vd_div(vd_sub(vd_mul(fxt, re), vd_mul(fyt, im)), dd);
	*tk = vd_sel(diag, zero, vd_mul(shared, vangle_term(&tab[2], c3)));
	if (kt == NULL)
		return;
	/* d3 of (k, t): the same conj(s_a) s_b, negated where one segment has length 0 */
	flip = vd_sel(za, vd_sel(zb, one, vd_set1(-1.0)), vd_sel(zb, vd_set1(-1.0), one));
	re = vd_mul(re, flip);
	im = vd_mul(im, flip);
	c3 = vd_div(vd_sub(vd_mul(fxk, re), vd_mul(fyk, im)), dd);
	*kt = vd_sel(diag, zero, vd_mul(shared, vangle_term(&tab[2], c3)));
}

/* lambda_i(t) = w_R lambda_{i-1}(t) + coef sum, for the L pairs from t0. */
ATTR static inline void
viterate_store(const mcc_relax_params *rp, double coef, const double *lam, double *nxt,
			   int t0, VD acc)
{
	vd_store(nxt + t0, vd_add(vd_mul(vd_set1(rp->w_r), vd_load(lam + t0)),
							  vd_mul(vd_set1(coef), acc)));
}

ATTR double *
RELAX_FN(mcc_match_work *w, const relax_pairs *rx, const mcc_relax_params *rp,
		 const mcc_sigmoid_tab *tab)
{
	int			n = rx->n;
	int			nv = (n + L - 1) / L * L;
	double	   *lam = w->lam[0];
	double	   *nxt = w->lam[1];
	double		coef = (1.0 - rp->w_r) / (double) (n - 1);

	/*
	 * Row k of rho^T: for the blocks of t before k's, rho(t, k) and the
	 * same entries of the other triangle, rho(k, t), into column k; for
	 * k's own block rho(t, k) alone (its other entries come with its other
	 * rows). Every entry is written once.
	 */
	for (int k = 0; k < n; k++)
	{
		int			kb = k - k % L;
		VD			tk;

		for (int t0 = 0; t0 < kb; t0 += L)
		{
			double		kt[L];
			VD			ktv;

			vrho_pass(rx, rp, tab, t0, k, &tk, &ktv);
			vd_store(w->rho + (size_t) k * nv + t0, tk);
			vd_store(kt, ktv);
			for (int i = 0; i < L; i++)
				w->rho[(size_t) (t0 + i) * nv + k] = kt[i];
		}
		vrho_pass(rx, rp, tab, kb, k, &tk, NULL);
		vd_store(w->rho + (size_t) k * nv + kb, tk);
	}
	for (int it = 0; it < rp->n_rel; it++)
	{
		double	   *tmp;
		int			t0 = 0;

		/* four blocks of t at a time: four independent chains of additions */
		for (; t0 + 3 * L < n; t0 += 4 * L)
		{
			VD			acc0 = vd_set1(0.0);
			VD			acc1 = vd_set1(0.0);
			VD			acc2 = vd_set1(0.0);
			VD			acc3 = vd_set1(0.0);

			for (int k = 0; k < n; k++)
			{
				const double *row = w->rho + (size_t) k * nv + t0;
				VD			lk = vd_set1(lam[k]);

				acc0 = vd_add(acc0, vd_mul(vd_load(row), lk));
				acc1 = vd_add(acc1, vd_mul(vd_load(row + L), lk));
				acc2 = vd_add(acc2, vd_mul(vd_load(row + 2 * L), lk));
				acc3 = vd_add(acc3, vd_mul(vd_load(row + 3 * L), lk));
			}
			viterate_store(rp, coef, lam, nxt, t0, acc0);
			viterate_store(rp, coef, lam, nxt, t0 + L, acc1);
			viterate_store(rp, coef, lam, nxt, t0 + 2 * L, acc2);
			viterate_store(rp, coef, lam, nxt, t0 + 3 * L, acc3);
		}
		for (; t0 < n; t0 += L)
		{
			VD			acc = vd_set1(0.0);

			for (int k = 0; k < n; k++)
				acc = vd_add(acc, vd_mul(vd_load(w->rho + (size_t) k * nv + t0), vd_set1(lam[k])));
			viterate_store(rp, coef, lam, nxt, t0, acc);
		}
		tmp = lam;
		lam = nxt;
		nxt = tmp;
	}
	return lam;
}
