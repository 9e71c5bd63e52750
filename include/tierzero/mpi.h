// Entry points of the Open MPI backend that need no MPI header.
#pragma once
#include <memory>
#include <string>

#include "tierzero/communicator.h"
#include "tierzero/topology.h"

namespace tierzero {

// True when an MPI launcher (mpirun, mpiexec, srun) started this process:
// the rank variable of Open MPI (OMPI_COMM_WORLD_RANK), PMIx (PMIX_RANK) or
// PMI (PMI_RANK) is set. A process started otherwise is a world of one and
// never initialises MPI, so it needs neither mpirun nor Open MPI's daemon
// (a single-GPU run, scripts/gpu_check.sh --bundle).
bool launched_by_mpi();
// Whether MPI is initialised and not yet finalised in this process.
bool mpi_initialized();

// Initialises MPI with MPI_THREAD_MULTIPLE for its lifetime (one per
// process) when launched_by_mpi(); otherwise a world of one (rank 0 of 1)
// that touches no MPI function.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }
  // Ends every rank of the job with `code` (for a failure on some ranks only).
  [[noreturn]] static void abort(int code);
  // How the job's ranks failed: all with the same message, all but with
  // different messages, or this rank alone (the others did not reach
  // their error within the grace period).
  enum class Failure { alike, different, alone };
  // After an error on this rank, before reporting it: waits up to `grace_s`
  // for every rank to reach its own error (a collective error) and then
  // compares the messages' fingerprints. After alike or different MPI can
  // finalise; after alone the caller reports and calls abort(), so ranks
  // still waiting in a collective do not hang. One rank: alone.
  Failure settle_after_error(const std::string& message, double grace_s = 5.0);

 private:
  int rank_ = 0;
  int size_ = 1;
};

// The job layout: `spec` parsed (Topology::parse) when non-empty, otherwise
// the node level detected with MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) and
// world inferred (one rank in a world of one). Collective over
// MPI_COMM_WORLD; throws TopologyError on every rank alike when the spec is
// malformed or does not match the job.
Topology resolve_topology(const std::string& spec);

// Every later wait on a collective of the MPI backend gives up after
// `seconds` (0 = wait forever): it prints which collective, on which level,
// among which ranks, did not complete, and aborts the job (exit code 3).
void set_comm_timeout(double seconds);

// A communicator over MPI_COMM_WORLD with a fresh Traffic counter; in a
// world of one without MPI, self_world(topology) (tierzero/communicator.h).
std::unique_ptr<Communicator> mpi_world(const Topology& topology);

}  // namespace tierzero
