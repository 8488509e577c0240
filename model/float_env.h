// The host floating-point environment that IEEE-exact arithmetic needs, for the extent of a scope.
//
// mcsim's libcuda.so.1 runs inside the user's process, and the user's process may have changed
// the environment: a program built with -Ofast / -ffast-math starts with flush-to-zero and
// denormals-are-zero set (crtfastmath), a numerical code may have called fesetround or unmasked
// floating-point traps. The GPU's arithmetic is independent of all that, so the reductions run
// under FloatEnvironment: round to nearest even, subnormals kept (no FTZ / DAZ), every exception
// masked. The destructor restores the caller's environment as it was, status flags included, so
// the simulated GPU's arithmetic neither traps nor leaves flags behind in the host program.
#pragma once

namespace mcsim::model {

class FloatEnvironment {
 public:
  FloatEnvironment();
  ~FloatEnvironment();
  FloatEnvironment(const FloatEnvironment&) = delete;
  FloatEnvironment& operator=(const FloatEnvironment&) = delete;

 private:
  // The caller's control and status words, in the platform's own form (see float_env.cpp).
  alignas(16) unsigned char saved_[64];
};

}  // namespace mcsim::model
