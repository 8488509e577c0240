/* mcsim's C API: what a test needs from the simulated node, callable from C (C99) and C++.
 *
 * mcsim's libcuda.so.1 exports these functions beside the driver's own (cu*). A test linked
 * against mcsim (CMake: find_package(mcsim), target mcsim::cuda or mcsim::api) calls them
 * directly. A program that must also run on real GPUs, where libcuda.so.1 is NVIDIA's, looks them
 * up at run time instead: define MCSIM_API_LOADER before including this header and call
 * mcsim_load_api (at the end of this file), which finds them only when the driver in the process
 * is mcsim's.
 *
 * Conventions:
 *  - Functions that can fail return an mcsim_status; on failure, mcsim_last_error() says why.
 *  - Every node query needs a successful cuInit (MCSIM_ERROR_NOT_INITIALIZED otherwise); kernel
 *    models and the version do not.
 *  - Version 1 of this API is frozen: its structures and functions never change. A later version
 *    adds functions (and structures of their own) and raises MCSIM_API_VERSION.
 *
 * include/mcsim/api.h and include/mcsim/kernel_model.h are the C++ spelling of the same API
 * (std::string, std::function), written on top of these functions.
 */
#ifndef MCSIM_MCSIM_H
#define MCSIM_MCSIM_H

#include <stddef.h>
#include <stdint.h>

#include "mcsim/kernels.h" /* enum mcsim_dtype, enum mcsim_redop: the step operands below */

/* The version of this header's API; mcsim_api_version() returns the library's. */
#define MCSIM_API_VERSION 3

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mcsim_status {
  MCSIM_SUCCESS = 0,
  MCSIM_ERROR_NOT_INITIALIZED = 1, /* cuInit has not succeeded in this process */
  MCSIM_ERROR_INVALID_VALUE = 2,   /* a NULL pointer, an unknown step kind, ... */
  MCSIM_ERROR_INVALID_PLAN = 3,    /* a fault plan that does not parse; the plan in force stays */
  MCSIM_ERROR_NOT_SUPPORTED = 4    /* not on this node (mcsim_last_error says why) */
} mcsim_status;

/* ---- Versions and errors ---- */

/* MCSIM_API_VERSION of the library (3). */
uint32_t mcsim_api_version(void);
/* mcsim's release ("0.1.0"). */
const char* mcsim_version(void);
/* Why the calling thread's last failing mcsim_* call failed ("" if none did). Valid until the
 * thread's next mcsim_* call. */
const char* mcsim_last_error(void);

/* ---- The node ---- */

/* 1 when cuInit has succeeded in this process, else 0. */
int mcsim_initialized(void);
/* The preset the node was built from ("hgx-h100"); "" before cuInit. Valid while the process
 * lives. */
const char* mcsim_preset_name(void);

/* A digest of every piece of state a driver call can change: the node's allocations, handles,
 * address space and exports, and the driver's own tables. Equal digests before and after a
 * failing call show that it changed nothing. */
mcsim_status mcsim_get_state_digest(uint64_t* digest);

/* What the node holds now: equal before and after a piece of work, nothing leaked. */
typedef struct mcsim_node_stats {
  uint64_t allocations;      /* live physical allocations (cuMemCreate, cuMemAlloc, imports) */
  uint64_t handles;          /* live allocation handle values */
  uint64_t reservations;     /* VA reservations, cuMemAlloc's included */
  uint64_t mappings;
  uint64_t exported_fds;     /* exported descriptors the node still recognises */
  uint64_t resident_bytes;   /* host memory actually backing simulated memory */
  uint64_t host_allocations; /* pinned host allocations */
  uint64_t multicast_objects;
  int32_t free_multicast_slots; /* multicast group slots left on each switch */
} mcsim_node_stats;
mcsim_status mcsim_get_node_stats(mcsim_node_stats* stats);

/* Version 2. The driver's tables of handles: how many of each kind this process's driver knows
 * now. A handle is known from the call that made it to the one that destroyed it (a destroyed
 * pool whose memory is still out stays until that memory is freed), so the counts are equal
 * before and after cycles of making and destroying handles (docs/reliability.md). */
typedef struct mcsim_driver_stats {
  uint64_t contexts;    /* contexts made with cuCtxCreate (the primary contexts are not counted) */
  uint64_t modules;     /* loaded modules, libraries' modules of each context included */
  uint64_t functions;   /* CUfunction handles of those modules */
  uint64_t libraries;
  uint64_t kernels;     /* CUkernel handles of those libraries */
  uint64_t memory_pools; /* created pools (the default pools are not counted) */
  uint64_t graphs;      /* graphs, child graphs included */
  uint64_t graph_nodes;
  uint64_t graph_execs;
  uint64_t streams;     /* created streams and per-thread default streams */
  uint64_t events;
  uint64_t destroyed_stream_work; /* work of destroyed streams kept for cuCtxSynchronize */
} mcsim_driver_stats;
mcsim_status mcsim_get_driver_stats(mcsim_driver_stats* stats);

/* Version 3. What the node holds for programs' kernels: the PTX modules it keeps parsed, one for
 * each loaded module whose PTX it was given, until the driver drops the module (cuModuleUnload,
 * cuLibraryUnload, its context destroyed) and no kernel launched from it still runs. On a shared
 * node, every attached process's together. Equal before and after cycles of loading and
 * unloading modules (docs/reliability.md). */
typedef struct mcsim_node_module_stats {
  uint64_t ptx_modules;
} mcsim_node_module_stats;
mcsim_status mcsim_get_node_module_stats(mcsim_node_module_stats* stats);

/* ---- Simulated time ---- */

/* Simulated time now, in picoseconds: the node's clock, or the calling thread's host clock where
 * it is later (docs/model.md, "What the host costs"). */
mcsim_status mcsim_get_simulated_time_ps(uint64_t* ps);
/* Lets `ps` picoseconds of simulated time pass, as a host thread sleeping that long would: device
 * work queued meanwhile runs. `reached_ps` (may be NULL) receives the time reached. On a node
 * shared by several processes (MCSIM_NODE) only their device work moves time:
 * MCSIM_ERROR_NOT_SUPPORTED. */
mcsim_status mcsim_advance_simulated_time(uint64_t ps, uint64_t* reached_ps);

/* The simulation's own work so far: pieces of work started (one per copy, memset, kernel or event
 * record, and one per timer a waiting host thread set) and timed waits they made (the events the
 * SystemC kernel scheduled). Zero counts, and the node's
 * clock, in a process attached to a shared node (which runs no simulation of its own). */
typedef struct mcsim_simulation_stats {
  uint64_t processes;
  uint64_t timed_waits;
  uint64_t simulated_ps;
} mcsim_simulation_stats;
mcsim_status mcsim_get_simulation_stats(mcsim_simulation_stats* stats);

/* ---- Fault plans (docs/faults.md) ---- */

/* Replaces the plan in force with `text` (the plan format; rules drawing random numbers use
 * `seed`). A plan that does not parse is MCSIM_ERROR_INVALID_PLAN, its problem in
 * mcsim_last_error() ("MCSIM_API:LINE: ..."), and the plan in force is unchanged. */
mcsim_status mcsim_install_fault_plan(const char* text, uint64_t seed);
/* Removes the plan in force: no call fails by plan any more. */
mcsim_status mcsim_clear_fault_plan(void);
/* Releases the calls held by `block` rules named `label`. */
mcsim_status mcsim_release_fault(const char* label);

typedef struct mcsim_fault_rule_report {
  const char* rule;  /* the rule as written */
  const char* where; /* FILE:LINE */
  uint64_t matched;  /* events at its point that passed its filters */
  uint64_t fired;
} mcsim_fault_rule_report;
/* The rules of the plan in force, in plan order, with their counts. `*rules` points at `*count`
 * reports valid until the calling thread's next mcsim_get_fault_report. */
mcsim_status mcsim_get_fault_report(const mcsim_fault_rule_report** rules, size_t* count);

/* ---- Kernel models (kernel_model.h has the model of execution; docs/multimem.md an example) ---- */

typedef struct mcsim_dim3 {
  uint32_t x, y, z;
} mcsim_dim3;

/* A launch as a model sees it. Valid during the expand call only. */
typedef struct mcsim_kernel_launch {
  const char* name;
  int32_t device; /* the launching context's device */
  mcsim_dim3 grid, block;
  uint32_t shared_mem_bytes;
  size_t param_count;
  const void* const* params;  /* params[i]: the bytes of parameter i ... */
  const size_t* param_bytes;  /* ... param_bytes[i] of them, as registered */
} mcsim_kernel_launch;

/* One thing a kernel does to memory. Addresses are device virtual addresses as the launching
 * context sees them; `count` is in elements of `dtype` (enum mcsim_dtype), `op` an enum
 * mcsim_redop. Which fields a kind reads: */
typedef enum mcsim_step_kind {
  MCSIM_STEP_COPY = 0,                     /* dst[0..bytes) = src[0..bytes) */
  MCSIM_STEP_REDUCE = 1,                   /* dst[i] = src[i] op src2[i], count, dtype, op */
  MCSIM_STEP_MULTIMEM_STORE = 2,           /* every member's mc[i] = src[i], count, dtype */
  MCSIM_STEP_MULTIMEM_REDUCE = 3,          /* every member's mc[i] += src[i], count, dtype */
  MCSIM_STEP_MULTIMEM_LOAD_REDUCE = 4,     /* dst[i] = op over the members' mc[i], count, dtype, op */
  MCSIM_STEP_MULTIMEM_LOAD_REDUCE_STORE = 5, /* every member's mc[i] = op over the members' mc[i] */
  MCSIM_STEP_SIGNAL = 6,                   /* every member's 32-bit word at mc += value */
  MCSIM_STEP_WAIT = 7                      /* until the 32-bit word at dst reaches value (mod 2^32) */
} mcsim_step_kind;

typedef struct mcsim_kernel_step {
  uint32_t kind; /* mcsim_step_kind */
  uint64_t dst, src, src2, mc;
  uint64_t bytes;
  uint64_t count;
  uint32_t dtype, op;
  uint32_t value;
} mcsim_kernel_step;

/* What a model fills in, through the three functions below. */
typedef struct mcsim_kernel_steps mcsim_kernel_steps;

/* Appends `step`. MCSIM_ERROR_INVALID_VALUE for an unknown kind (nothing appended). */
mcsim_status mcsim_kernel_steps_add(mcsim_kernel_steps* steps, const mcsim_kernel_step* step);
/* How many bytes of loads each thread keeps outstanding (kernel_model.h:
 * KernelSteps::setBytesInFlightPerThread); 0, the default, takes the GPU preset's. */
mcsim_status mcsim_kernel_steps_set_bytes_in_flight_per_thread(mcsim_kernel_steps* steps, uint32_t bytes);
/* The launch is invalid: the kernel traps. cuLaunchKernel succeeds, `why` is printed and the
 * context's sticky error becomes CUDA_ERROR_LAUNCH_FAILED; steps added are dropped. */
mcsim_status mcsim_kernel_steps_reject(mcsim_kernel_steps* steps, const char* why);

/* Describes one launch of the kernel: adds its steps, or rejects it. Called on the launching
 * thread, once per launch; `user` is what was registered with it. */
typedef void (*mcsim_kernel_expand_fn)(void* user, const mcsim_kernel_launch* launch, mcsim_kernel_steps* steps);

/* Registers (or replaces) the model of kernels named `name`: parameter i is `param_bytes[i]`
 * bytes (how cuLaunchKernel's kernelParams are read), and `expand` describes a launch. `release`
 * (may be NULL) is called with `user` once the model is replaced and no launch uses it any more.
 * Thread-safe; takes effect for launches made after it returns. Needs no cuInit. */
mcsim_status mcsim_register_kernel_model(const char* name, const size_t* param_bytes, size_t param_count,
                                         mcsim_kernel_expand_fn expand, void* user, void (*release)(void* user));
/* 1 when a model is registered under `name` (mcsim's kernel library included), else 0. */
int mcsim_has_kernel_model(const char* name);

/* Step builders: `mcsim_kernel_step s = mcsim_step_copy(dst, src, n); mcsim_kernel_steps_add(steps, &s);` */
static inline mcsim_kernel_step mcsim_step_copy(uint64_t dst, uint64_t src, uint64_t bytes) {
  mcsim_kernel_step s = {MCSIM_STEP_COPY, dst, src, 0, 0, bytes, 0, 0, 0, 0};
  return s;
}
static inline mcsim_kernel_step mcsim_step_reduce(uint64_t dst, uint64_t a, uint64_t b, uint64_t count, uint32_t dtype,
                                                  uint32_t op) {
  mcsim_kernel_step s = {MCSIM_STEP_REDUCE, dst, a, b, 0, 0, count, dtype, op, 0};
  return s;
}
static inline mcsim_kernel_step mcsim_step_multimem_store(uint64_t mc, uint64_t src, uint64_t count, uint32_t dtype) {
  mcsim_kernel_step s = {MCSIM_STEP_MULTIMEM_STORE, 0, src, 0, mc, 0, count, dtype, 0, 0};
  return s;
}
static inline mcsim_kernel_step mcsim_step_multimem_reduce(uint64_t mc, uint64_t src, uint64_t count, uint32_t dtype) {
  mcsim_kernel_step s = {MCSIM_STEP_MULTIMEM_REDUCE, 0, src, 0, mc, 0, count, dtype, MCSIM_REDOP_ADD, 0};
  return s;
}
static inline mcsim_kernel_step mcsim_step_multimem_load_reduce(uint64_t dst, uint64_t mc, uint64_t count,
                                                                uint32_t dtype, uint32_t op) {
  mcsim_kernel_step s = {MCSIM_STEP_MULTIMEM_LOAD_REDUCE, dst, 0, 0, mc, 0, count, dtype, op, 0};
  return s;
}
static inline mcsim_kernel_step mcsim_step_multimem_load_reduce_store(uint64_t mc, uint64_t count, uint32_t dtype,
                                                                      uint32_t op) {
  mcsim_kernel_step s = {MCSIM_STEP_MULTIMEM_LOAD_REDUCE_STORE, 0, 0, 0, mc, 0, count, dtype, op, 0};
  return s;
}
static inline mcsim_kernel_step mcsim_step_signal(uint64_t mc, uint32_t value) {
  mcsim_kernel_step s = {MCSIM_STEP_SIGNAL, 0, 0, 0, mc, 4, 0, 0, 0, value};
  return s;
}
static inline mcsim_kernel_step mcsim_step_wait(uint64_t local, uint32_t value) {
  mcsim_kernel_step s = {MCSIM_STEP_WAIT, local, 0, 0, 0, 4, 0, 0, 0, value};
  return s;
}

#ifdef __cplusplus
} /* extern "C" */
#endif

/* ---- Optional use from a program built for real GPUs ----
 *
 *   #define MCSIM_API_LOADER
 *   #include "mcsim/mcsim.h"
 *
 *   mcsim_api sim;
 *   if (mcsim_load_api(&sim)) {            // the driver in this process is mcsim's
 *     sim.install_fault_plan("cuMemMap : nth=1 -> CUDA_ERROR_OUT_OF_MEMORY\n", 0);
 *   }
 *
 * mcsim_load_api asks the dynamic linker for the libcuda.so.1 this process uses (dlopen of the
 * soname returns the one already loaded, whether the program linked it or the CUDA runtime
 * opened it) and looks the functions up in it. Under NVIDIA's driver, or with no driver at all,
 * it returns 0 and the program runs without mcsim's extras. Link with -ldl on glibc before 2.34.
 * (A program linked directly against libcuda.so.1 may equally call
 * dlsym(RTLD_DEFAULT, "mcsim_api_version") itself.)
 */
#ifdef MCSIM_API_LOADER
#include <dlfcn.h>
#include <string.h>

typedef struct mcsim_api {
  uint32_t (*api_version)(void);
  const char* (*version)(void);
  const char* (*last_error)(void);
  int (*initialized)(void);
  const char* (*preset_name)(void);
  mcsim_status (*get_state_digest)(uint64_t*);
  mcsim_status (*get_node_stats)(mcsim_node_stats*);
  mcsim_status (*get_simulated_time_ps)(uint64_t*);
  mcsim_status (*advance_simulated_time)(uint64_t, uint64_t*);
  mcsim_status (*get_simulation_stats)(mcsim_simulation_stats*);
  mcsim_status (*install_fault_plan)(const char*, uint64_t);
  mcsim_status (*clear_fault_plan)(void);
  mcsim_status (*release_fault)(const char*);
  mcsim_status (*get_fault_report)(const mcsim_fault_rule_report**, size_t*);
  mcsim_status (*kernel_steps_add)(mcsim_kernel_steps*, const mcsim_kernel_step*);
  mcsim_status (*kernel_steps_set_bytes_in_flight_per_thread)(mcsim_kernel_steps*, uint32_t);
  mcsim_status (*kernel_steps_reject)(mcsim_kernel_steps*, const char*);
  mcsim_status (*register_kernel_model)(const char*, const size_t*, size_t, mcsim_kernel_expand_fn, void*,
                                        void (*)(void*));
  int (*has_kernel_model)(const char*);
  mcsim_status (*get_driver_stats)(mcsim_driver_stats*); /* version 2 */
  mcsim_status (*get_node_module_stats)(mcsim_node_module_stats*); /* version 3 */
} mcsim_api;

/* 1 with every member of `api` set when the process's libcuda.so.1 is mcsim's and offers API
 * version MCSIM_API_VERSION or later; else 0 with every member NULL. */
static inline int mcsim_load_api(mcsim_api* api) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL); /* kept open: the pointers point into it */
  void* symbol = NULL;
  int complete = lib != NULL;
  memset(api, 0, sizeof *api);
  /* memcpy, not a cast: ISO C has no conversion from void* to a function pointer. */
#define MCSIM_LOAD_(member)                                              \
  symbol = complete ? dlsym(lib, "mcsim_" #member) : NULL;             \
  if (symbol == NULL) complete = 0;                                      \
  else memcpy(&api->member, &symbol, sizeof symbol);
  MCSIM_LOAD_(api_version)
  if (complete && api->api_version() < MCSIM_API_VERSION) complete = 0;
  MCSIM_LOAD_(version)
  MCSIM_LOAD_(last_error)
  MCSIM_LOAD_(initialized)
  MCSIM_LOAD_(preset_name)
  MCSIM_LOAD_(get_state_digest)
  MCSIM_LOAD_(get_node_stats)
  MCSIM_LOAD_(get_simulated_time_ps)
  MCSIM_LOAD_(advance_simulated_time)
  MCSIM_LOAD_(get_simulation_stats)
  MCSIM_LOAD_(install_fault_plan)
  MCSIM_LOAD_(clear_fault_plan)
  MCSIM_LOAD_(release_fault)
  MCSIM_LOAD_(get_fault_report)
  MCSIM_LOAD_(kernel_steps_add)
  MCSIM_LOAD_(kernel_steps_set_bytes_in_flight_per_thread)
  MCSIM_LOAD_(kernel_steps_reject)
  MCSIM_LOAD_(register_kernel_model)
  MCSIM_LOAD_(has_kernel_model)
  MCSIM_LOAD_(get_driver_stats)
  MCSIM_LOAD_(get_node_module_stats)
#undef MCSIM_LOAD_
  if (!complete) {
    memset(api, 0, sizeof *api);
    if (lib != NULL) dlclose(lib);
  }
  return complete;
}
#endif /* MCSIM_API_LOADER */

#endif /* MCSIM_MCSIM_H */
