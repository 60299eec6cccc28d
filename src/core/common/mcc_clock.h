/*
 * mcc_clock.h: a clock read in microseconds, for timers and logs (the
 * engine's stage timers, its pool's job stamps, its wall-clock times).
 * CLOCK_MONOTONIC for durations, CLOCK_REALTIME for times shown to people.
 */
#ifndef MCC_CLOCK_H
#define MCC_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t
mcc_clock_usec(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

#endif							/* MCC_CLOCK_H */
