/*
 * testclock.h: the clocks of the test programs, tools and benchmarks:
 * wall time (monotonic) and the calling thread's CPU time (which other
 * load on a shared machine does not inflate), in seconds or milliseconds.
 */
#ifndef MCC_TESTCLOCK_H
#define MCC_TESTCLOCK_H

#include <time.h>

/* Seconds of a monotonic clock. */
static inline double
tclock_wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU seconds of the calling thread. */
static inline double
tclock_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU seconds of every thread of the process (a benchmark's own threads). */
static inline double
tclock_process_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
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
