/* mcsim_load_api (include/mcsim/mcsim.h) in a C99 program that links no libcuda.so.1, as a
 * program built for real GPUs would use it. `c_api_loader mcsim` expects mcsim's driver (run it
 * under `mcsim run`): the API loads and answers. `c_api_loader absent` expects none (no driver, or
 * NVIDIA's): the loader says so and leaves the table empty. Prints "ok" and exits 0 on success. */
#define MCSIM_API_LOADER
#include "mcsim/mcsim.h"

#include <stdio.h>
#include <string.h>

static int failures = 0;

static void check(int ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "FAILED: %s\n", what);
    ++failures;
  }
}

/* The loaded table's kernel-model entry points, driven through a model with no parameters. */
static void expand_nothing(void* user, const mcsim_kernel_launch* launch, mcsim_kernel_steps* steps) {
  (void)user;
  (void)launch;
  (void)steps;
}

static void under_mcsim(const mcsim_api* sim) {
  uint64_t digest = 1, ps = 1;
  check(sim->api_version() >= MCSIM_API_VERSION, "api_version");
  check(strlen(sim->version()) > 0, "version");
  /* No cuInit in this program: the node queries say so. */
  check(sim->initialized() == 0, "initialized before cuInit");
  check(sim->get_state_digest(&digest) == MCSIM_ERROR_NOT_INITIALIZED && digest == 0, "digest before cuInit");
  check(strcmp(sim->last_error(), "cuInit has not succeeded") == 0, "last_error");
  check(sim->get_simulated_time_ps(&ps) == MCSIM_ERROR_NOT_INITIALIZED && ps == 0, "time before cuInit");
  check(sim->get_driver_stats(NULL) == MCSIM_ERROR_INVALID_VALUE, "driver stats without a destination");
  check(sim->get_node_module_stats(NULL) == MCSIM_ERROR_INVALID_VALUE, "node module stats without a destination");
  check(sim->register_kernel_model("loader_kernel", NULL, 0, &expand_nothing, NULL, NULL) == MCSIM_SUCCESS,
        "register_kernel_model");
  check(sim->has_kernel_model("loader_kernel") == 1, "has_kernel_model");
}

int main(int argc, char** argv) {
  mcsim_api sim;
  const int loaded = mcsim_load_api(&sim);
  if (argc != 2 || (strcmp(argv[1], "mcsim") != 0 && strcmp(argv[1], "absent") != 0)) {
    fprintf(stderr, "usage: c_api_loader mcsim|absent\n");
    return 2;
  }
  if (strcmp(argv[1], "mcsim") == 0) {
    check(loaded == 1, "mcsim_load_api under mcsim");
    if (loaded) under_mcsim(&sim);
  } else {
    check(loaded == 0, "mcsim_load_api without mcsim");
    check(sim.api_version == NULL && sim.has_kernel_model == NULL, "an empty table without mcsim");
  }
  if (failures != 0) return 1;
  printf("ok\n");
  return 0;
}
