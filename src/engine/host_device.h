// FACT_HD: a function the host calls and, when nvcc compiles the file, the device too (one
// definition evaluated on both sides: attention_bound.h, epilogue_program.h).
#pragma once

#ifdef __CUDACC__
#define FACT_HD __host__ __device__
#else
#define FACT_HD
#endif
