// Entry points of the Open MPI backend that need no MPI header.
#pragma once
#include <memory>
#include <string>

#include "tierzero/communicator.h"
#include "tierzero/topology.h"

namespace tierzero {

// Initialises MPI with MPI_THREAD_MULTIPLE for its lifetime (one per process).
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

 private:
  int rank_ = 0;
  int size_ = 1;
};

// The job layout: `spec` parsed (Topology::parse) when non-empty, otherwise
// the node level detected with MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) and
// world inferred. Collective over MPI_COMM_WORLD; throws TopologyError on every
// rank alike when the spec is malformed or does not match the job.
Topology resolve_topology(const std::string& spec);

// A communicator over MPI_COMM_WORLD with a fresh Traffic counter.
std::unique_ptr<Communicator> mpi_world(const Topology& topology);

}  // namespace tierzero
