// Per-thread objects the driver can still use while the thread ends and the process exits.
//
// The driver is called by code it does not control at the worst moments: from other libraries'
// thread_local destructors, from threads that are ending (NCCL's proxy threads), and from atexit
// handlers (the CUDA runtime's, NCCL's env plugin), which exit() runs after it has destroyed the
// main thread's thread_local objects. A thread_local std::vector or std::string used there is
// freed memory (a double free at exit was seen with each). A ThreadOwned object is heap memory
// reached through a pthread key instead: glibc runs key destructors after the thread's C++
// thread_local destructors, so the object lives through them; a call after its key's destructor
// gets a fresh object (the key is set again, and glibc runs the destructors again for it). The
// main thread's objects are never freed: exit() runs no key destructors.
//
//   struct PlanTag;  // one tag per object
//   NodePlan& plan = threadOwned<NodePlan, PlanTag>();
#pragma once

#include <pthread.h>

#include <cstdlib>

namespace mcsim {

template <typename T, typename Tag>
T& threadOwned() {
  static const pthread_key_t key = [] {
    pthread_key_t k;
    if (pthread_key_create(&k, [](void* p) { delete static_cast<T*>(p); }) != 0) std::abort();
    return k;
  }();
  auto* object = static_cast<T*>(pthread_getspecific(key));
  if (object == nullptr) {
    object = new T();
    if (pthread_setspecific(key, object) != 0) std::abort();
  }
  return *object;
}

}  // namespace mcsim
