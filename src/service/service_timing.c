/*
 * service_timing.c: the stages of a request through the matcher service in
 * the backend (service_timing.h). Always measured (a clock read per stage,
 * nanoseconds against milliseconds of a call), logged only on request: the
 * engine's own stages are in its log at stop (docs/matcher-engine.md), and
 * the two together break a whole identify() down.
 */
#include "service_timing.h"

#include "lib/stringinfo.h"

bool		mcc_log_identify_timing = false;

/* Names in the LOG line, one word each (scripts/bench-partitions.sh parses them). */
static const char *const stage_names[SERVE_T_N] = {
	[SERVE_T_CHECKS] = "checks",
	[SERVE_T_CONNECT] = "connect",
	[SERVE_T_SEND] = "send",
	[SERVE_T_WAIT] = "wait",
	[SERVE_T_PARSE] = "parse",
	[SERVE_T_COUNT] = "count",
	[SERVE_T_PICK] = "pick",
	[SERVE_T_RECHECK] = "recheck",
	[SERVE_T_REFINE] = "refine",
	[SERVE_T_SETTLE] = "settle",
	[SERVE_T_OTHER] = "other",
};

void
serve_timing_start(serve_timing *t)
{
	memset(t, 0, sizeof(*t));
	INSTR_TIME_SET_CURRENT(t->start);
	t->mark = t->start;
}

void
serve_timing_lap(serve_timing *t, serve_stage st)
{
	instr_time	now;
	instr_time	d;

	INSTR_TIME_SET_CURRENT(now);
	d = now;
	INSTR_TIME_SUBTRACT(d, t->mark);
	t->ms[st] += INSTR_TIME_GET_MILLISEC(d);
	t->mark = now;
}

void
serve_timing_log(serve_timing *t, const char *gallery, int relations, bool served)
{
	StringInfoData s;
	instr_time	d;

	if (!mcc_log_identify_timing)
		return;
	serve_timing_lap(t, SERVE_T_OTHER);
	d = t->mark;
	INSTR_TIME_SUBTRACT(d, t->start);
	initStringInfo(&s);
	for (int i = 0; i < SERVE_T_N; i++)
		appendStringInfo(&s, " %s=%.3f", stage_names[i], t->ms[i]);
	ereport(LOG,
			(errmsg("identify() timing: \"%s\" %d relations %s total=%.3f%s requests=%d",
					gallery, relations, served ? "served" : "not-served",
					INSTR_TIME_GET_MILLISEC(d), s.data, t->requests),
			 errhidestmt(true)));
	pfree(s.data);
}
