// NCCL on NVIDIA GPUs, RCCL (same API) on AMD GPUs: one include and one set
// of names for both. Building for ROCm defines TZ_USE_RCCL (not built here).
#pragma once
#if defined(TZ_USE_RCCL)
#include <hip/hip_runtime.h>
#include <rccl/rccl.h>
#define tzStream_t hipStream_t
#define tzEvent_t hipEvent_t
#define tzStreamCreate(s) hipStreamCreateWithFlags((s), hipStreamNonBlocking)
#define tzStreamDestroy hipStreamDestroy
#define tzEventCreate(e) hipEventCreateWithFlags((e), hipEventDisableTiming)
#define tzEventDestroy hipEventDestroy
#define tzEventRecord hipEventRecord
#define tzEventSynchronize hipEventSynchronize
#define tzEventQuery hipEventQuery
#define tzSuccess hipSuccess
#define tzGetErrorString hipGetErrorString
#else
#include <cuda_runtime.h>
#include <nccl.h>
#define tzStream_t cudaStream_t
#define tzEvent_t cudaEvent_t
#define tzStreamCreate(s) cudaStreamCreateWithFlags((s), cudaStreamNonBlocking)
#define tzStreamDestroy cudaStreamDestroy
#define tzEventCreate(e) cudaEventCreateWithFlags((e), cudaEventDisableTiming)
#define tzEventDestroy cudaEventDestroy
#define tzEventRecord cudaEventRecord
#define tzEventSynchronize cudaEventSynchronize
#define tzEventQuery cudaEventQuery
#define tzSuccess cudaSuccess
#define tzGetErrorString cudaGetErrorString
#endif
