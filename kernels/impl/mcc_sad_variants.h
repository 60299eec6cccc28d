/*
 * mcc_sad_variants.h: the four plain (J, Y) variants of the thread of
 * mcc_sad_body.h, named SAD_NAME(column_j2y8), SAD_NAME(thread_j2y8) and so
 * on. mcc_sad.cu instantiates them for its kernels and
 * test/unit/test_sad_gpu_emu.c on the CPU, so that the emulation checks the
 * very set the GPU runs. No include guard: the includer defines SAD_NAME
 * and what mcc_sad_body.h reads (SAD_HD, SAD_UNROLL, SAD_VSAD, SAD_LDT,
 * SAD_LDP) first.
 */
#define SAD_J 2
#define SAD_Y 8
#define SAD_COLUMN_FN SAD_NAME(column_j2y8)
#define SAD_THREAD_FN SAD_NAME(thread_j2y8)
#include "mcc_sad_body.h"
#undef SAD_J
#undef SAD_Y
#undef SAD_COLUMN_FN
#undef SAD_THREAD_FN

#define SAD_J 2
#define SAD_Y 4
#define SAD_COLUMN_FN SAD_NAME(column_j2y4)
#define SAD_THREAD_FN SAD_NAME(thread_j2y4)
#include "mcc_sad_body.h"
#undef SAD_J
#undef SAD_Y
#undef SAD_COLUMN_FN
#undef SAD_THREAD_FN

#define SAD_J 1
#define SAD_Y 4
#define SAD_COLUMN_FN SAD_NAME(column_j1y4)
#define SAD_THREAD_FN SAD_NAME(thread_j1y4)
#include "mcc_sad_body.h"
#undef SAD_J
#undef SAD_Y
#undef SAD_COLUMN_FN
#undef SAD_THREAD_FN

#define SAD_J 4
#define SAD_Y 4
#define SAD_COLUMN_FN SAD_NAME(column_j4y4)
#define SAD_THREAD_FN SAD_NAME(thread_j4y4)
#include "mcc_sad_body.h"
#undef SAD_J
#undef SAD_Y
#undef SAD_COLUMN_FN
#undef SAD_THREAD_FN
