// CUresult assertions shared by the test suites: results are compared by name, so that a
// failure reads "CUDA_ERROR_INVALID_VALUE vs CUDA_SUCCESS". Needs only cuda.h, so that the
// conformance suite can use it against the real driver too.
#pragma once

#include <cuda.h>
#include <gtest/gtest.h>

#include <string>

namespace cutest {

inline std::string resultName(CUresult r) {
  const char* s = nullptr;
  if (cuGetErrorName(r, &s) != CUDA_SUCCESS || s == nullptr) return "CUresult(" + std::to_string(r) + ")";
  return s;
}

}  // namespace cutest

#define EXPECT_CU(expected, call) EXPECT_EQ(cutest::resultName(expected), cutest::resultName(call))
#define ASSERT_CU(expected, call) ASSERT_EQ(cutest::resultName(expected), cutest::resultName(call))
#define ASSERT_OK(call) ASSERT_CU(CUDA_SUCCESS, call)
#define EXPECT_OK(call) EXPECT_CU(CUDA_SUCCESS, call)
