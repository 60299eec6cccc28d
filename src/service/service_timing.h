/*
 * service_timing.h: where one request through the matcher service spends
 * its time in the backend (service_timing.c), logged per call when
 * mcc.log_identify_timing is on (docs/matcher-service.md, "Timing a
 * request").
 *
 * The stages follow one another: each lap gives the time since the last
 * one to the stage it names, so that the stages add up to the whole call.
 */
#ifndef SERVICE_TIMING_H
#define SERVICE_TIMING_H

#include "postgres.h"

#include "portability/instr_time.h"

typedef enum serve_stage
{
	SERVE_T_CHECKS,				/* the gallery's checks: registration, RLS, owner,
								 * its relations, triggers, unique key, slot */
	SERVE_T_CONNECT,			/* the engine's connection, the cache's state (a load) */
	SERVE_T_SEND,				/* requests built and written */
	SERVE_T_WAIT,				/* waiting for the engine's replies, read */
	SERVE_T_PARSE,				/* replies parsed */
	SERVE_T_COUNT,				/* n from the visibility count */
	SERVE_T_PICK,				/* candidates judged by their xids, ranked */
	SERVE_T_RECHECK,			/* the re-check queries under the snapshot */
	SERVE_T_REFINE,				/* REFINE of re-checked shortlists */
	SERVE_T_SETTLE,				/* the engine told the fate of its xids */
	SERVE_T_OTHER,				/* between those */
	SERVE_T_N
} serve_stage;

typedef struct serve_timing
{
	instr_time	start;
	instr_time	mark;			/* the last lap */
	double		ms[SERVE_T_N];
	int			requests;		/* SEARCHes sent */
} serve_timing;

extern bool mcc_log_identify_timing;

/* Start timing a call. */
extern void serve_timing_start(serve_timing *t);

/* The time since the last lap into stage st. */
extern void serve_timing_lap(serve_timing *t, serve_stage st);

/*
 * The call's LOG line (mcc.log_identify_timing): the gallery, its
 * relations, whether the service answered, the whole and each stage.
 */
extern void serve_timing_log(serve_timing *t, const char *gallery, int relations, bool served);

#endif							/* SERVICE_TIMING_H */
