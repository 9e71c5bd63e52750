// Mapping of tierzero element types and reductions onto MPI.
#pragma once
#include <mpi.h>

#include <string>

#include "tierzero/communicator.h"

namespace tierzero::mpi {

MPI_Datatype datatype(DType t);
// The MPI op that sums `t` (user-defined ops for bf16 and fp16, which are
// summed in fp32 and rounded to nearest even per addition).
MPI_Op sum_op(DType t);
// Throws CommError with MPI's text when rc is not MPI_SUCCESS.
void check(int rc, const char* what);
// Converts an element count to MPI's int, throwing CommError on overflow.
int to_int(std::size_t n, const char* what);

}  // namespace tierzero::mpi
