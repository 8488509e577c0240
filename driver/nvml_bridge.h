/* The bridge between mcsim's libnvidia-ml.so.1 (nvml/) and its libcuda.so.1: plain C functions
 * that libcuda.so.1 exports (driver/exports.map: mcsim_nvml_*) and the NVML library calls, so that
 * NVML answers from the node the process is attached to (embedded or shared) with the driver's
 * own view of it: the preset, the resolved device attributes, the node's memory, link and fabric
 * manager state. Nothing here is part of mcsim's public C API (include/mcsim/mcsim.h).
 *
 * Every function returns 0 on success or a CUresult: CUDA_ERROR_NOT_INITIALIZED before
 * mcsim_nvml_attach, CUDA_ERROR_INVALID_DEVICE for a device or link out of range,
 * CUDA_ERROR_DEVICE_UNAVAILABLE when the shared node went away. */
#ifndef MCSIM_DRIVER_NVML_BRIDGE_H
#define MCSIM_DRIVER_NVML_BRIDGE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a structure below changes; mcsim_nvml_attach refuses another. */
#define MCSIM_NVML_BRIDGE_VERSION 1

typedef struct mcsim_nvml_node_info {
  char preset[64];              /* the preset's name */
  int gpu_count;
  int host_numa_nodes;
  int links_per_gpu;            /* NVLink links per GPU, 0 without NVLink */
  int switch_count;             /* NVSwitch chips, 0 without a switch fabric */
  int imex_channel;             /* 1 when the node has an IMEX channel (a multi-node NVLink domain) */
  int multicast_team_size;      /* the fabric clique's size (multicast.max_team_size) */
  int cuda_driver_version;      /* cuDriverGetVersion */
  int fabric_manager_state;     /* 0 not-started, 1 initialising, 2 ready, 3 degraded */
} mcsim_nvml_node_info;

typedef struct mcsim_nvml_device_info {
  char name[96];                /* cuDeviceGetName */
  unsigned char uuid[16];       /* cuDeviceGetUuid */
  uint32_t pci_domain, pci_bus, pci_device;
  int cc_major, cc_minor;
  uint64_t memory_total;        /* bytes */
  uint64_t memory_free;         /* bytes not held by allocations on the node */
  int host_numa_node;           /* CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID */
  int numa_id;                  /* CU_DEVICE_ATTRIBUTE_NUMA_ID (-1: the GPU is no NUMA node) */
  int nvlink_up;                /* 1 while the GPU's links are up (fault plans take them down) */
} mcsim_nvml_device_info;

/* Attaches the calling process to its node as cuInit(0) does (the same node: a process makes one
 * at its first cuInit, and a later cuInit returns the first one's result). */
int mcsim_nvml_attach(int bridge_version);
int mcsim_nvml_node(mcsim_nvml_node_info* info);
int mcsim_nvml_device(int device, mcsim_nvml_device_info* info);
/* The NVSwitch chip that NVLink `link` of `device` is wired to (links are numbered switch by
 * switch, in the order of the preset's nvswitch.links_per_gpu_per_switch). */
int mcsim_nvml_link_switch(int device, int link, int* switch_index);

#ifdef __cplusplus
}
#endif

#endif
