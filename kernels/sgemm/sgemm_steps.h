// sgemm_steps.h — the ladder's steps, in order, as one X-macro list: sgemm_binding.cpp
// declares sgemm_<step>_launch (sgemm.cu) and wraps it as sgemm_<step>, sgemm_cpu.cpp
// defines sgemm_<step> for CPU tensors; spec.py names the same functions.
#pragma once

#define SGEMM_STEPS(X) \
  X(naive) X(coalesced) X(smem) X(blocktile_1d) X(blocktile_2d) X(vectorized) X(warptiling)
