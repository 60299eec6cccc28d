/*
 * test_job.c: mcc_job_run_shared, the tools' way to run workers that share
 * one job: every thread runs the function once on the same argument, all
 * have finished when it returns, their signals are blocked (as every
 * thread mcc_job starts), and with no thread to start the caller runs it.
 * mcc_job_run_each: worker i on element i of an array, worker 0 on the
 * caller, the others on threads with their signals blocked, all finished
 * when it returns.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#include "unit.h"
#include "mcc_job.h"

/* Is SIGINT blocked in the calling thread (as in every thread mcc_job starts)? */
static int
sigint_blocked(void)
{
	sigset_t	now;

	pthread_sigmask(SIG_SETMASK, NULL, &now);
	return sigismember(&now, SIGINT);
}

typedef struct run_counts
{
	atomic_int	runs;			/* calls of the worker */
	atomic_int	blocked;		/* calls that found SIGINT blocked */
	atomic_int	caller;			/* calls on the thread that ran the test */
	pthread_t	self;
} run_counts;

static void *
worker(void *arg)
{
	run_counts *s = arg;

	if (sigint_blocked())
		atomic_fetch_add(&s->blocked, 1);
	if (pthread_equal(pthread_self(), s->self))
		atomic_fetch_add(&s->caller, 1);
	atomic_fetch_add(&s->runs, 1);
	return NULL;
}

/* One element of mcc_job_run_each's array. */
typedef struct each_elem
{
	int			runs;
	int			on_caller;
	int			blocked;
	pthread_t	self;
} each_elem;

static void *
each_worker(void *arg)
{
	each_elem  *e = arg;

	e->blocked = sigint_blocked();
	e->on_caller = pthread_equal(pthread_self(), e->self) != 0;
	e->runs++;
	return NULL;
}

/* mcc_job_run_each over n elements: each ran once, only the first on the caller. */
static void
check_each(int n)
{
	each_elem	e[16];
	int			ok = 1;

	for (int i = 0; i < n; i++)
		e[i] = (each_elem) {.self = pthread_self()};
	mcc_job_run_each(n, each_worker, e, sizeof(each_elem));
	for (int i = 0; i < n; i++)
		ok = ok && e[i].runs == 1 && e[i].on_caller == (i == 0) && e[i].blocked == (i != 0);
	UNIT_CHECK(ok, "run_each over %d: every element once, the first on the caller, the others on threads with signals blocked", n);
}

int
main(void)
{
	const int	counts[] = {1, 4, 100};

	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
	{
		run_counts	s = {.self = pthread_self()};

		mcc_job_run_shared(counts[i], worker, &s);
		UNIT_CHECK(atomic_load(&s.runs) == counts[i] && atomic_load(&s.caller) == 0 &&
				   atomic_load(&s.blocked) == counts[i],
				   "%d threads: the worker ran %d times, none on the caller, %d with signals blocked",
				   counts[i], atomic_load(&s.runs), atomic_load(&s.blocked));
	}
	{
		run_counts	s = {.self = pthread_self()};

		mcc_job_run_shared(0, worker, &s);
		UNIT_CHECK(atomic_load(&s.runs) == 1 && atomic_load(&s.caller) == 1,
				   "no thread to start: the caller runs the worker once (%d runs, %d on the caller)",
				   atomic_load(&s.runs), atomic_load(&s.caller));
	}
	check_each(1);
	check_each(2);
	check_each(16);
	return unit_done();
}
