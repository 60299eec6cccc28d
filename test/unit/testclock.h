/*
 * testclock.h: the clocks of the test programs, tools and benchmarks:
 * wall time (monotonic) and the calling thread's CPU time (which other
 * load on a shared machine does not inflate), in seconds or milliseconds.
 */
#ifndef MCC_TESTCLOCK_H
#define MCC_TESTCLOCK_H

#include <time.h>

/* Seconds of the clock id. */
static inline double
tclock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Seconds of a monotonic clock. */
static inline double
tclock_wall_s(void)
{
	return tclock_s(CLOCK_MONOTONIC);
}

/* CPU seconds of the calling thread. */
static inline double
tclock_cpu_s(void)
{
	return tclock_s(CLOCK_THREAD_CPUTIME_ID);
}

/* CPU seconds of every thread of the process (a benchmark's own threads). */
static inline double
tclock_process_cpu_s(void)
{
	return tclock_s(CLOCK_PROCESS_CPUTIME_ID);
}

/* Milliseconds of a monotonic clock. */
static inline double
tclock_wall_ms(void)
{
	return tclock_wall_s() * 1e3;
}

/* CPU milliseconds of the calling thread. */
static inline double
tclock_cpu_ms(void)
{
	return tclock_cpu_s() * 1e3;
}

#endif							/* MCC_TESTCLOCK_H */
