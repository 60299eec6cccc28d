/*
 * testpoll.h: the cancel poll of the unit tests (the poll callback of the
 * alignment, chamfer and distance-transform options): it counts its calls
 * and asks to stop once it has been called more than poll_limit times. A
 * test sets polls = 0 and poll_limit before each run and may read polls
 * afterwards.
 */
#ifndef MCC_TESTPOLL_H
#define MCC_TESTPOLL_H

static int	polls;
static int	poll_limit;

/* Nonzero (stop) from call poll_limit + 1 on. */
static int
stop_after(void *arg)
{
	(void) arg;
	return ++polls > poll_limit;
}

#endif
