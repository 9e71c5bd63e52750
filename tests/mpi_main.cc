// GoogleTest main for multi-rank tests: initialises MPI (started without
// mpirun: a world of one, tierzero/mpi.h), prints the full report on rank 0
// and only failures elsewhere, and fails every rank when any rank failed.
#include <gtest/gtest.h>
#include <mpi.h>

#include "tierzero/mpi.h"

namespace {
class FailurePrinter : public testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& r) override {
    if (r.failed()) std::fprintf(stderr, "[rank %d] %s:%d: %s\n", rank_, r.file_name() ? r.file_name() : "?", r.line_number(), r.summary());
  }

 private:
  int rank_;
};
}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  tierzero::MpiSession mpi(&argc, &argv);
  if (mpi.rank() != 0) {
    auto& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(mpi.rank()));
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  if (tierzero::mpi_initialized()) MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (mpi.rank() == 0 && failed) std::fprintf(stderr, "some rank failed\n");
  return failed;
}
