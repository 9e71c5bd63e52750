#include "comm/mpi/mpi_types.h"

#include <climits>
#include <mutex>

#include "tierzero/error.h"

namespace tierzero::mpi {

namespace {
template <float (*Load)(std::uint16_t), std::uint16_t (*Store)(float)>
void sum16(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const std::uint16_t*>(in);
  auto* b = static_cast<std::uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = Store(Load(a[i]) + Load(b[i]));
}

MPI_Op g_bf16_sum = MPI_OP_NULL;
MPI_Op g_f16_sum = MPI_OP_NULL;
std::once_flag g_ops_once;

void create_ops() {
  MPI_Op_create(&sum16<bf16_to_f32, f32_to_bf16>, 1, &g_bf16_sum);
  MPI_Op_create(&sum16<f16_to_f32, f32_to_f16>, 1, &g_f16_sum);
}
}  // namespace

MPI_Datatype datatype(DType t) {
  switch (t) {
    case DType::f32: return MPI_FLOAT;
    case DType::bf16:
    case DType::f16: return MPI_UINT16_T;
    case DType::i8: return MPI_INT8_T;
    case DType::u8: return MPI_UINT8_T;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op sum_op(DType t) {
  if (t == DType::bf16 || t == DType::f16) {
    std::call_once(g_ops_once, create_ops);
    return t == DType::bf16 ? g_bf16_sum : g_f16_sum;
  }
  return MPI_SUM;
}

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  TZ_THROW(CommError, std::string(what) + " failed: " + std::string(text, len));
}

int to_int(std::size_t n, const char* what) {
  TZ_CHECK(n <= static_cast<std::size_t>(INT_MAX), CommError,
           std::string(what) + ": " + std::to_string(n) + " elements exceed MPI's int count");
  return static_cast<int>(n);
}

}  // namespace tierzero::mpi
