/*
 * eng_scan.c: the chunked multi-probe scan that the pool's threads run.
 */
#include "eng_scan.h"

#include <stdlib.h>
#include <string.h>

#include "mcc_clamp.h"
#include "mcc_proto.h"

#define CHUNK_TARGET_BYTES	(256 * 1024)	/* a typical per-core L2 */
#define CHUNK_MIN			32

uint32_t
eng_scan_chunk(const eng_cache *c, int threads)
{
	const mcc_soa *g = &c->soa;
	uint64_t	per_cyl = 8u * (uint64_t) g->words + 7;
	uint64_t	cyl = g->n_tpl ? (g->n_cyl + g->n_tpl - 1) / g->n_tpl : 1;
	uint64_t	per_tpl = cyl * per_cyl + 14;
	uint64_t	chunk = CHUNK_TARGET_BYTES / (per_tpl ? per_tpl : 1);
	uint64_t	even;

	/* small galleries: still give every thread a few parts */
	even = ((uint64_t) g->n_tpl + 4u * (uint64_t) threads - 1) / (4u * (uint64_t) threads);
	if (even < chunk)
		chunk = even;
	return (uint32_t) MCC_CLAMP(chunk, CHUNK_MIN, ENG_CHUNK_MAX);
}

/* Is every probe of the batch cancelled (and there are probes: counts alone are not)? */
static bool
batch_dead(eng_job *job)
{
	eng_batch  *b = (eng_batch *) job;

	if (b->n_slots == 0)
		return b->n_counts == 0;
	for (uint32_t i = 0; i < b->n_slots; i++)
		if (b->slots[i].cancel == NULL || !atomic_load(b->slots[i].cancel))
			return false;
	return true;
}

/* Part n_scan_parts + i: count i of the batch (eng_cache_count). */
static void
count_run(eng_batch *b, uint32_t i)
{
	eng_count  *ct = &b->counts[i];
	int64_t		t0 = eng_pool_now_usec();

	ct->state = eng_cache_count(b->cache, ct->xmin, MCC_PROTO_MAX_GROUPS, &ct->certain,
								&ct->groups, &ct->n_groups) ?
		MCC_COUNT_DONE : MCC_COUNT_OVERFLOW;
	ct->usec = eng_pool_now_usec() - t0;
}

/* Score every live probe against chunk `part` (or run a count part). */
static void
batch_run(eng_job *job, uint32_t part, void *scratch)
{
	eng_batch  *b = (eng_batch *) job;
	const eng_cache *c = b->cache;
	uint32_t	t0 = part * b->chunk;
	uint32_t	t1 = t0 + b->chunk;
	float	   *scores = scratch;
	eng_hit    *cand = (eng_hit *) ((char *) scratch + ENG_CHUNK_MAX * sizeof(float));

	if (part >= b->n_scan_parts)
	{
		count_run(b, part - b->n_scan_parts);
		return;
	}
	if (t1 > c->soa.n_tpl)
		t1 = c->soa.n_tpl;
	for (uint32_t s = 0; s < b->n_slots; s++)
	{
		eng_slot   *slot = &b->slots[s];
		uint32_t	n = 0;
		uint64_t	ge = 0;

		if (slot->cancel && atomic_load(slot->cancel))
			continue;
		mcc_soa_scan(slot->probe, &c->soa, t0, t1, scores);
		for (uint32_t t = t0; t < t1; t++)
		{
			const eng_entry *e = &c->entries[t];
			float		sc = scores[t - t0];

			if ((e->flags & ENG_E_PURGED) || !(sc >= slot->min_score))
				continue;
			ge++;
			cand[n].score = sc;
			cand[n].key = e->key;
			cand[n].hash = e->hash;
			cand[n].entry = t;
			n++;
		}
		pthread_mutex_lock(&slot->lock);
		slot->n_ge += ge;
		for (uint32_t i = 0; i < n; i++)
			if (eng_hits_may_enter(&slot->hits, cand[i].score))
				eng_hits_push(&slot->hits, &cand[i]);
		pthread_mutex_unlock(&slot->lock);
	}
}

/* Make b a chunked CPU pass over its cache. */
static void
cpu_parts(eng_batch *b)
{
	b->chunk = eng_scan_chunk(b->cache, b->threads);
	b->job.run = batch_run;
	b->job.dead = batch_dead;
	b->n_scan_parts = b->n_slots == 0 ? 0 :
		(uint32_t) (((uint64_t) b->cache->soa.n_tpl + b->chunk - 1) / b->chunk);
	b->job.n_parts = b->n_scan_parts + b->n_counts;
	b->gpu = NULL;
}

/* The whole pass on the GPU, in one part (eng_gpu.h); counts in the others. */
static void
gpu_run(eng_job *job, uint32_t part, void *scratch)
{
	eng_batch  *b = (eng_batch *) job;

	if (part >= b->n_scan_parts)
	{
		count_run(b, part - b->n_scan_parts);
		return;
	}
	int64_t		t0 = eng_pool_now_usec();

	mcc_error_clear(&b->gpu_err);
	b->gpu_outcome = eng_gpu_pass(b->gpu, b, &b->gpu_err);
	if (b->gpu_outcome == ENG_GPU_DONE && b->gpu_refdata)
		eng_gpu_prepare_refinement(b->gpu, b->cache);
	b->gpu_usec = eng_pool_now_usec() - t0;
}

eng_batch *
eng_batch_new(const eng_cache *c, uint32_t n_slots, int threads)
{
	eng_batch  *b = calloc(1, sizeof(*b));

	if (b == NULL)
		return NULL;
	b->slots = calloc(n_slots ? n_slots : 1, sizeof(eng_slot));
	if (b->slots == NULL)
	{
		free(b);
		return NULL;
	}
	b->cache = c;
	b->n_slots = n_slots;
	b->threads = threads > 0 ? threads : 1;
	cpu_parts(b);
	for (uint32_t i = 0; i < n_slots; i++)
		pthread_mutex_init(&b->slots[i].lock, NULL);
	return b;
}

void
eng_batch_set(eng_batch *b, uint32_t i, const mcc_probe *probe, uint32_t k,
			  float min_score, atomic_int *cancel)
{
	eng_slot   *s = &b->slots[i];
	uint32_t	live = eng_cache_searchable(b->cache);

	s->probe = probe;
	s->min_score = min_score;
	s->k = k < live ? k : live;
	s->cancel = cancel;
	eng_hits_init(&s->hits, s->k);
}

int
eng_batch_add_count(eng_batch *b, uint64_t xmin)
{
	eng_count  *c = realloc(b->counts, ((size_t) b->n_counts + 1) * sizeof(eng_count));

	if (c == NULL)
		return -1;
	b->counts = c;
	memset(&c[b->n_counts], 0, sizeof(eng_count));
	c[b->n_counts].xmin = xmin;
	b->n_counts++;
	b->job.n_parts = b->n_scan_parts + b->n_counts;
	return (int) b->n_counts - 1;
}

/* Forget the counts' results (they are computed again). */
static void
counts_reset(eng_batch *b)
{
	for (uint32_t i = 0; i < b->n_counts; i++)
	{
		free(b->counts[i].groups);
		b->counts[i].groups = NULL;
		b->counts[i].n_groups = 0;
		b->counts[i].certain = 0;
		b->counts[i].state = MCC_COUNT_NONE;
	}
}

void
eng_batch_set_template(eng_batch *b, uint32_t i, const uint8_t *tpl, uint32_t len)
{
	b->slots[i].tpl = tpl;
	b->slots[i].tpl_len = len;
}

void
eng_batch_use_gpu(eng_batch *b, eng_gpu *gpu)
{
	b->gpu = gpu;
	b->gpu_outcome = ENG_GPU_DONE;
	b->job.run = gpu_run;
	b->job.dead = NULL;			/* one scan part: nothing to skip */
	b->n_scan_parts = 1;
	b->job.n_parts = 1 + b->n_counts;
}

void
eng_batch_to_cpu(eng_batch *b)
{
	for (uint32_t i = 0; i < b->n_slots; i++)
	{
		eng_slot   *s = &b->slots[i];

		eng_hits_free(&s->hits);
		eng_hits_init(&s->hits, s->k);
		s->n_ge = 0;
	}
	counts_reset(b);
	cpu_parts(b);
}

void
eng_batch_finish(eng_batch *b)
{
	for (uint32_t i = 0; i < b->n_slots; i++)
		eng_hits_sort(&b->slots[i].hits);
}

void
eng_batch_free(eng_batch *b)
{
	if (b == NULL)
		return;
	for (uint32_t i = 0; i < b->n_slots; i++)
	{
		eng_hits_free(&b->slots[i].hits);
		pthread_mutex_destroy(&b->slots[i].lock);
	}
	counts_reset(b);
	free(b->counts);
	free(b->slots);
	free(b);
}

void
eng_batch_run_here(eng_batch *b)
{
	void	   *scratch = malloc(ENG_SCRATCH_BYTES);

	if (scratch == NULL)
		return;
	for (uint32_t p = 0; p < b->job.n_parts; p++)
		batch_run(&b->job, p, scratch);
	free(scratch);
	eng_batch_finish(b);
}
