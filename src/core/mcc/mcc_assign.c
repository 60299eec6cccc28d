/*
 * mcc_assign.c: maximum-weight one-to-one assignment (LSA, mcc-spec §5.3).
 *
 * The Hungarian method with row and column potentials (Kuhn 1955, Munkres
 * 1957, in the shortest augmenting path form): rows are added one at a time
 * and each is joined by the cheapest augmenting path under reduced costs
 * cost(i, j) - u(i) - v(j), which stay non-negative; O(n^2 m) for n <= m.
 * Costs are BIG - weight, so a minimum-cost assignment of all n rows is a
 * maximum-weight one (every assignment has exactly n pairs). Integers
 * throughout, so the optimum is exact and the same on every machine. When
 * there are more rows than columns the matrix is read transposed.
 */
#include "mcc_match.h"

#define INF_COST	INT64_MAX

size_t
mcc_assign_work_len(int n, int m)
{
	int			k = n > m ? n : m;

	return 8 * ((size_t) k + 1);
}

/* Weight of row i, column j of the possibly transposed problem. */
static inline int64_t
weight_at(const int64_t *weight, int m_orig, int transposed, int i, int j)
{
	return transposed ? weight[(size_t) j * m_orig + i] : weight[(size_t) i * m_orig + j];
}

int64_t
mcc_assign_max(int n_orig, int m_orig, const int64_t *weight, int *col_of_row,
			   int64_t *work)
{
	int			transposed = n_orig > m_orig;
	int			n = transposed ? m_orig : n_orig;	/* rows, n <= m */
	int			m = transposed ? n_orig : m_orig;
	int64_t    *u = work;		/* n + 1 */
	int64_t    *v = u + (m + 1);	/* m + 1 */
	int64_t    *minv = v + (m + 1);
	int64_t    *p = minv + (m + 1);	/* row matched to column j, 0: none */
	int64_t    *way = p + (m + 1);
	int64_t    *used = way + (m + 1);
	int64_t		big = 0;
	int64_t		total = 0;

	for (int r = 0; r < n_orig; r++)
		col_of_row[r] = -1;
	if (n == 0 || m == 0)
		return 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < m; j++)
			if (weight_at(weight, m_orig, transposed, i, j) > big)
				big = weight_at(weight, m_orig, transposed, i, j);
	for (int j = 0; j <= m; j++)
	{
		u[j] = 0;
		v[j] = 0;
		p[j] = 0;
		way[j] = 0;
	}

	/* rows and columns count from 1 here; column 0 is the virtual start */
	for (int i = 1; i <= n; i++)
	{
		int			j0 = 0;

		p[0] = i;
		for (int j = 0; j <= m; j++)
		{
			minv[j] = INF_COST;
			used[j] = 0;
		}
		do
		{
			int			i0 = (int) p[j0];
			int64_t		delta = INF_COST;
			int			j1 = 0;

			used[j0] = 1;
			for (int j = 1; j <= m; j++)
			{
				int64_t		cur;

				if (used[j])
					continue;
				cur = (big - weight_at(weight, m_orig, transposed, i0 - 1, j - 1)) -
					u[i0] - v[j];
				if (cur < minv[j])
				{
					minv[j] = cur;
					way[j] = j0;
				}
				if (minv[j] < delta)
				{
					delta = minv[j];
					j1 = j;
				}
			}
			for (int j = 0; j <= m; j++)
			{
				if (used[j])
				{
					u[p[j]] += delta;
					v[j] -= delta;
				}
				else
					minv[j] -= delta;
			}
			j0 = j1;
		} while (p[j0] != 0);
		/* flip the augmenting path */
		do
		{
			int			j1 = (int) way[j0];

			p[j0] = p[j1];
			j0 = j1;
		} while (j0 != 0);
	}

	for (int j = 1; j <= m; j++)
	{
		int			i;

		if (p[j] == 0)
			continue;
		i = (int) p[j] - 1;
		if (transposed)
			col_of_row[j - 1] = i;
		else
			col_of_row[i] = j - 1;
		total += weight_at(weight, m_orig, transposed, i, j - 1);
	}
	return total;
}
