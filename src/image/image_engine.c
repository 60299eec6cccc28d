/*
 * image_engine.c: image and point jobs sent to the matcher engine (the
 * only process of mcc that touches CUDA), and the setting that chooses:
 *
 *   mcc.image_device = auto     the engine when it has a GPU, else this
 *                               backend's CPU threads (the default);
 *                      cpu      this backend, always;
 *                      gpu      the engine's GPU, or an error;
 *                      engine   the engine: its GPU if it has one, else
 *                               its CPU threads (offloads the backend).
 *
 * The SQL functions of SAD search (sad_sql.c), elastic matching
 * (dp2d_sql.c) and alignment (align_sql.c) decode and check their
 * arguments here, then either run src/core themselves or send the work
 * (pixels, points, templates) to the engine and wait for its answer on
 * the backend's connection (service_client.c): the wait serves
 * interrupts, a cancel or statement_timeout sends CANCEL and raises. The
 * engine runs the same src/core code or the GPU libraries that equal it,
 * and returns a job's error as src/core reports it, so that it is raised
 * exactly as the backend would raise its own (docs/matcher-engine.md).
 *
 * The engine's threads and memory are shared by every role: only members
 * of MCC_SERVICE_ROLE (and superusers) may send it image jobs. For others,
 * auto runs in the backend, and gpu or engine are refused, when set (SET)
 * and again when used (a setting can come from elsewhere, and SET ROLE can
 * follow it). The engine runs these jobs on threads of their own, so they
 * never hold up identify(); when it already has mcc.image_queue_limit
 * jobs, auto runs the call here and gpu or engine fail (53000).
 */
#include "image_pg.h"
#include "service.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "utils/guc.h"

typedef enum mcc_image_device_mode
{
	MCC_IMAGE_DEVICE_AUTO,
	MCC_IMAGE_DEVICE_CPU,
	MCC_IMAGE_DEVICE_GPU,
	MCC_IMAGE_DEVICE_ENGINE
} mcc_image_device_mode;

static const struct config_enum_entry image_device_options[] = {
	{"auto", MCC_IMAGE_DEVICE_AUTO, false},
	{"cpu", MCC_IMAGE_DEVICE_CPU, false},
	{"gpu", MCC_IMAGE_DEVICE_GPU, false},
	{"engine", MCC_IMAGE_DEVICE_ENGINE, false},
	{NULL, 0, false}
};

static int	mcc_image_device = MCC_IMAGE_DEVICE_AUTO;

/* Room left in a frame for a job's fixed fields. */
#define FRAME_SLACK		4096

/*
 * SET mcc.image_device = gpu or engine: only roles that may use the
 * engine. Other sources (the configuration file, ALTER ROLE ... SET) are
 * checked when a call would use the engine.
 */
static bool
check_image_device(int *newval, void **extra, GucSource source)
{
	if ((*newval == MCC_IMAGE_DEVICE_GPU || *newval == MCC_IMAGE_DEVICE_ENGINE) &&
		source >= PGC_S_INTERACTIVE && IsTransactionState() && OidIsValid(GetUserId()) &&
		!mcc_role_may_use_service(GetUserId()))
	{
		GUC_check_errcode(ERRCODE_INSUFFICIENT_PRIVILEGE);
		GUC_check_errmsg("permission denied to set mcc.image_device to \"%s\"",
						 *newval == MCC_IMAGE_DEVICE_GPU ? "gpu" : "engine");
		GUC_check_errdetail("Only members of role \"%s\" may run image jobs in the matcher engine.",
							MCC_SERVICE_ROLE);
		return false;
	}
	return true;
}

/* Define mcc.image_device. */
void
mcc_image_engine_init(void)
{
	DefineCustomEnumVariable("mcc.image_device",
							 "Where image and point functions run: auto, cpu, gpu or engine.",
							 "auto: the matcher engine's GPU when it has one, else this backend; "
							 "cpu: this backend; gpu: the engine's GPU or an error; engine: the "
							 "engine, on its GPU or its CPU threads. Results are the same.",
							 &mcc_image_device, MCC_IMAGE_DEVICE_AUTO, image_device_options,
							 PGC_USERSET, 0, check_image_device, NULL, NULL);
}

/* The setting's name of the current mode, for messages. */
static const char *
mode_name(void)
{
	return image_device_options[mcc_image_device].name;
}

/* Refuse a call that mcc.image_device sends to an engine that cannot take it. */
static void
refuse(const char *fn, int sqlstate, const char *why)
{
	ereport(ERROR,
			(errcode(sqlstate),
			 errmsg("%s cannot run in the matcher engine: %s", fn, why),
			 errdetail("mcc.image_device is \"%s\".", mode_name()),
			 errhint("Set mcc.image_device to \"cpu\" or \"auto\" to run it in this backend.")));
}

bool
mcc_image_request_start(const char *fn, uint64 request_bytes, uint64 reply_bytes,
						StringInfo frame)
{
	bool		must = mcc_image_device == MCC_IMAGE_DEVICE_GPU ||
		mcc_image_device == MCC_IMAGE_DEVICE_ENGINE;
	char	   *why;
	uint32		flags;

	if (mcc_image_device == MCC_IMAGE_DEVICE_CPU)
		return false;
	if (!mcc_role_may_use_service(GetUserId()))
	{
		if (must)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to run %s in the matcher engine", fn),
					 errdetail("Only members of role \"%s\" may run image jobs in the matcher engine; mcc.image_device is \"%s\".",
							   MCC_SERVICE_ROLE, mode_name()),
					 errhint("Set mcc.image_device to \"cpu\" or \"auto\" to run it in this backend.")));
		elog(DEBUG1, "%s runs in this backend: role \"%s\" is not a member of \"%s\"", fn,
			 GetUserNameFromId(GetUserId(), false), MCC_SERVICE_ROLE);
		return false;
	}
	if (request_bytes + FRAME_SLACK > MCC_PROTO_MAX_FRAME ||
		reply_bytes + FRAME_SLACK > MCC_PROTO_MAX_FRAME)
	{
		if (must)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("%s cannot run in the matcher engine: its data is too large", fn),
					 errdetail("The request has " UINT64_FORMAT " bytes and the answer " UINT64_FORMAT
							   "; a message to or from the engine holds at most %u.",
							   request_bytes, reply_bytes, MCC_PROTO_MAX_FRAME),
					 errhint("Set mcc.image_device to \"cpu\" or \"auto\" to run it in this backend.")));
		elog(DEBUG1, "%s runs in this backend: its data is too large for the matcher engine", fn);
		return false;
	}
	if (mcc_conn_ensure(&why) != MCC_CONN_OK)
	{
		if (must)
			refuse(fn, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, why);
		elog(DEBUG1, "%s runs in this backend: %s", fn, why);
		return false;
	}
	flags = mcc_conn_engine_flags();
	if (!(flags & MCC_HELLO_IMAGES))
	{
		if (must)
			refuse(fn, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
				   "this matcher engine does not take image jobs (restart it after an upgrade)");
		elog(DEBUG1, "%s runs in this backend: the matcher engine does not take image jobs", fn);
		return false;
	}
	if (!(flags & MCC_HELLO_GPU))
	{
		if (mcc_image_device == MCC_IMAGE_DEVICE_GPU)
			refuse(fn, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, "the matcher engine has no GPU");
		if (mcc_image_device == MCC_IMAGE_DEVICE_AUTO)
		{
			elog(DEBUG1, "%s runs in this backend: the matcher engine has no GPU", fn);
			return false;
		}
	}
	mcc_frame_begin(frame);
	mcc_put_u32(frame, mcc_image_device == MCC_IMAGE_DEVICE_GPU ? MCC_IMG_GPU : MCC_IMG_ANY);
	return true;
}

void
mcc_image_put_u32(StringInfo s, uint32 v)
{
	mcc_put_u32(s, v);
}

void
mcc_image_put_u64(StringInfo s, uint64 v)
{
	mcc_put_u64(s, v);
}

void
mcc_image_put_f64(StringInfo s, double v)
{
	mcc_put_f64(s, v);
}

/* An image field: width, height, the pixels row by row. */
void
mcc_image_put_image(StringInfo s, const mcc_image *img)
{
	mcc_put_u32(s, img->width);
	mcc_put_u32(s, img->height);
	for (uint32 y = 0; y < img->height; y++)
		appendBinaryStringInfo(s, (const char *) img->pixels + (size_t) y * img->stride,
							   img->width);
}

uint64
mcc_image_field_bytes(const mcc_image *img)
{
	return 8 + (uint64) img->width * img->height;
}

/* A bytes field of a result as a palloc'd string. */
static char *
get_string(mcc_image_result *res, size_t max)
{
	uint32		len = mcc_image_get_u32(res);
	const char *p = mcc_image_get_raw(res, len);

	return pnstrdup(p, Min((size_t) len, max));
}

bool
mcc_image_engine_run(StringInfo frame, uint16 type, const char *fn, mcc_image_result *res)
{
	uint64		id = mcc_conn_next_id();
	mcc_reply	reply;
	char	   *s;

	mcc_conn_send(frame, type, id);
	pfree(frame->data);
	frame->data = NULL;
	mcc_conn_wait_reply_unbounded(id, &reply);
	if (reply.type == MCC_MSG_ERROR && reply.err_code == MCC_PERR_NO_GPU)
		refuse(fn, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, reply.err_message);
	if (reply.type == MCC_MSG_ERROR && reply.err_code == MCC_PERR_BUSY)
	{
		if (mcc_image_device != MCC_IMAGE_DEVICE_AUTO)
			refuse(fn, ERRCODE_INSUFFICIENT_RESOURCES, reply.err_message);
		elog(DEBUG1, "%s runs in this backend: %s", fn, reply.err_message);
		return false;
	}
	if (reply.type != type + 1)
		mcc_raise_engine_error(&reply);
	memset(res, 0, sizeof(*res));
	res->body = reply.body;
	res->err.status = (mcc_status) mcc_image_get_u32(res);
	s = get_string(res, MCC_ERRMSG_LEN - 1);
	strlcpy(res->err.message, s, sizeof(res->err.message));
	s = get_string(res, MCC_ERRMSG_LEN - 1);
	strlcpy(res->err.detail, s, sizeof(res->err.detail));
	res->device = get_string(res, 256);
	if (res->err.status == MCC_OK)
		elog(DEBUG1, "%s ran in the matcher engine on %s", fn, res->device);
	return true;
}

#define RESULT_ENDED "An image job's result ended early."

/* Raw bytes of a result; a short result is a protocol violation. */
const char *
mcc_image_get_raw(mcc_image_result *res, size_t n)
{
	return mcc_reader_take(&res->body, n, RESULT_ENDED);
}

uint32
mcc_image_get_u32(mcc_image_result *res)
{
	uint32		v = mcc_wire_rd_u32(&res->body);

	mcc_reader_check(&res->body, RESULT_ENDED);
	return v;
}

uint64
mcc_image_get_u64(mcc_image_result *res)
{
	uint64		v = mcc_wire_rd_u64(&res->body);

	mcc_reader_check(&res->body, RESULT_ENDED);
	return v;
}

double
mcc_image_get_f64(mcc_image_result *res)
{
	double		v = mcc_wire_rd_f64(&res->body);

	mcc_reader_check(&res->body, RESULT_ENDED);
	return v;
}
