/*
 * gpu_devices.h: how the GPU checks (gpu_check, gpu_check_refine) begin:
 * the devices probed and listed, or, where there are none, the checks that
 * the probe and mcc_gpu_open fail cleanly. Included after unit.h (its
 * checks count in the program's TAP output).
 */
#ifndef MCC_GPU_DEVICES_H
#define MCC_GPU_DEVICES_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "../unit/unit.h"
#include "mcc_gpu.h"

/*
 * Probe the GPUs for a check run as `PROGRAM [--no-device]`. With devices: each one printed, one check
 * that there is one at least, and their count returned. With --no-device
 * (make gpu-check runs the checks so first, every device hidden) or where
 * the probe finds no GPU: checks that the probe and mcc_gpu_open (profile
 * prof) fail cleanly, and returns -1 for --no-device, 0 for no GPU (the GPU
 * part skips, saying why).
 */
static inline int
gdev_probe(int argc, char **argv, const mcc_profile *prof)
{
	mcc_gpu_devinfo info[MCC_GPU_MAX_DEVICES];
	bool		hidden = argc > 1 && strcmp(argv[1], "--no-device") == 0;
	const char *none = hidden ? "a visible device" : "a GPU";
	mcc_error	err;
	int			count = 0;
	int			dev0 = 0;
	mcc_gpu    *c = NULL;
	mcc_gpu_code rc = mcc_gpu_probe(&count, info, MCC_GPU_MAX_DEVICES, &err);

	if (hidden || rc != MCC_GPU_OK)
	{
		UNIT_CHECK((rc == MCC_GPU_NO_DEVICE || rc == MCC_GPU_NO_DRIVER) && err.message[0],
				   "probe without %s fails cleanly: %s", none, err.message);
		rc = mcc_gpu_open(&dev0, 1, prof, NULL, &c, &err);
		UNIT_CHECK(rc != MCC_GPU_OK && c == NULL && err.message[0], "open without %s fails cleanly: %s",
				   none, err.message);
		if (!hidden)
			printf("# GPU part skipped: %s\n", err.message);
		return hidden ? -1 : 0;
	}
	for (int i = 0; i < count; i++)
		printf("# GPU %d: %s, cc %d.%d, %d SMs, %.1f GiB (%.1f free)\n", i, info[i].name,
			   info[i].cc_major, info[i].cc_minor, info[i].sm_count,
			   info[i].mem_total / 1073741824.0, info[i].mem_free / 1073741824.0);
	UNIT_CHECK(count >= 1, "probe finds %d device(s)", count);
	return count;
}

#endif							/* MCC_GPU_DEVICES_H */
