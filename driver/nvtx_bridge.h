/* The bridge between mcsim's NVTX injection library (nvtx/, libmcsim-nvtx.so) and its
 * libcuda.so.1: plain C functions that libcuda.so.1 exports (driver/exports.map: mcsim_nvtx_*)
 * and the injection library calls, so that a program's NVTX ranges and marks land on the
 * process's timeline at the simulated time they were made (docs/timeline.md). Nothing here is
 * part of mcsim's public C API (include/mcsim/mcsim.h).
 *
 * `domain` is NULL for NVTX's default domain, else the name the program gave nvtxDomainCreate. */
#ifndef MCSIM_DRIVER_NVTX_BRIDGE_H
#define MCSIM_DRIVER_NVTX_BRIDGE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a function below changes; mcsim_nvtx_attach refuses another. */
#define MCSIM_NVTX_BRIDGE_VERSION 1

/* 1 when this process keeps a timeline (MCSIM_TIMELINE or MCSIM_TIMELINE_SUMMARY; the timeline
 * starts here if the program speaks NVTX before its first driver call), 0 when it keeps none or
 * `bridge_version` is not this library's: NVTX then stays a no-op. */
int mcsim_nvtx_attach(int bridge_version);
/* nvtxRangePush: opens a range on the calling thread's row of `domain`; returns its nesting
 * level (0 for an outermost range). */
int mcsim_nvtx_push(const char* domain, const char* message);
/* nvtxRangePop: closes the thread's innermost open range of `domain`; returns its level, or -1
 * when none is open. */
int mcsim_nvtx_pop(const char* domain);
/* nvtxMark: an instant on the thread's row of `domain`. */
void mcsim_nvtx_mark(const char* domain, const char* message);
/* nvtxRangeStart / End: a range any thread may end, and that need not nest; the id (never 0
 * while a timeline is kept) is what nvtxRangeStart returns. */
uint64_t mcsim_nvtx_start(const char* domain, const char* message);
void mcsim_nvtx_end(uint64_t id);

#ifdef __cplusplus
}
#endif

#endif
