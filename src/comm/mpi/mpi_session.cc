#include <mpi.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "comm/mpi/mpi_communicator.h"
#include "comm/mpi/mpi_types.h"
#include "tierzero/error.h"
#include "tierzero/mpi.h"

namespace tierzero {

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(v)) return true;
  return false;
}

bool mpi_initialized() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);  // both may be called before MPI_Init and after MPI_Finalize
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

MpiSession::MpiSession(int* argc, char*** argv) {
  if (!launched_by_mpi()) return;  // a world of one
  int provided = 0;
  mpi::check(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
  TZ_CHECK(provided == MPI_THREAD_MULTIPLE, CommError, "the MPI library does not provide MPI_THREAD_MULTIPLE");
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() {
  if (mpi_initialized()) MPI_Finalize();
}

void MpiSession::abort(int code) {
  if (mpi_initialized()) MPI_Abort(MPI_COMM_WORLD, code);
  std::fflush(nullptr);
  std::_Exit(code);
}

MpiSession::Failure MpiSession::settle_after_error(const std::string& message, double grace_s) {
  if (size_ == 1 || !mpi_initialized()) return Failure::alone;
  MPI_Request r;
  MPI_Ibarrier(MPI_COMM_WORLD, &r);
  const double deadline = MPI_Wtime() + grace_s;
  int done = 0;
  while (!done && MPI_Wtime() < deadline) {
    MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    if (!done) usleep(1000);
  }
  if (!done) return Failure::alone;
  // Every rank is here: the same message everywhere when the fingerprints' minimum and maximum agree.
  std::uint64_t fnv = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : message) fnv = (fnv ^ c) * 1099511628211ull;
  std::uint64_t lo = fnv, hi = fnv;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi ? Failure::alike : Failure::different;
}

Topology resolve_topology(const std::string& spec) {
  if (!mpi_initialized()) return spec.empty() ? Topology({1, 1, 1}, {Level::node, Level::world}) : Topology::parse(spec, 1);
  int size = 0, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (!spec.empty()) return Topology::parse(spec, size);
  MPI_Comm node;
  mpi::check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node),
             "MPI_Comm_split_type");
  int local = 0, local_rank = 0;
  MPI_Comm_size(node, &local);
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_free(&node);
  // Every node must have the same rank count, with its ranks numbered contiguously.
  int bad = (rank - local_rank) % local != 0 ? 1 : 0;
  int lo = local, hi = local, any_bad = 0;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  TZ_CHECK(lo == hi, TopologyError,
           "detected nodes with different rank counts (" + std::to_string(lo) + " to " + std::to_string(hi) +
               "); give --topology");
  TZ_CHECK(!any_bad, TopologyError, "ranks of one node are not numbered contiguously; map ranks by node or give --topology");
  return Topology({1, local, size / local}, {Level::node, Level::world});
}

std::unique_ptr<Communicator> mpi_world(const Topology& topology) {
  if (!mpi_initialized()) return self_world(topology);
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  TZ_CHECK(topology.size() == size, TopologyError,
           "topology '" + topology.to_string() + "' has " + std::to_string(topology.size()) +
               " ranks but the job has " + std::to_string(size));
  std::vector<int> members(size);
  for (int i = 0; i < size; ++i) members[i] = i;
  return std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, topology, std::move(members), std::make_shared<Traffic>());
}

}  // namespace tierzero
