// The other half of rt_rdc.cu: device functions, a __device__ table of pointers to them and a
// __device__ variable, in a compilation unit of their own (a relocatable object of the -rdc build).
typedef int (*IntOp)(int);

__device__ int rdc_offset = 5;
__device__ __noinline__ int op_add(int x) { return x + rdc_offset; }
__device__ __noinline__ int op_mul(int x) { return x * 3; }
__device__ IntOp rdc_table[2] = {op_add, op_mul};
__device__ __noinline__ int rdc_scale(int x) { return 10 * x; }
// Written by one kernel (rdc_put) and read by another (rdc_get), both in rt_rdc.cu: one copy per
// image, however its kernels are linked.
__device__ int rdc_mailbox = 7;
