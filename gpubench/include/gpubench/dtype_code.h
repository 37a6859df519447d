// gpubench/dtype_code.h — the dtype code a torch binding passes to a CUDA launcher.
//
// Device code (.cu) stays free of torch headers so nvcc compiles it in well
// under a second (with torch headers: about a minute). The binding (.cpp) turns
// a tensor's dtype into one of these codes; the launcher switches on it.
#pragma once

enum GbDtype : int {
  GB_FLOAT32 = 0,
  GB_FLOAT16 = 1,
  GB_BFLOAT16 = 2,
};
