// The NCCL communicator: every collective of the Communicator interface on
// device buffers, in every float and integer type, checked in closed form
// like the MPI backend's (small integers: sums are exact in every type);
// split groups; non-blocking requests; traffic counted by the same rule;
// flight records with the MPI backend's fields.
// One rank per GPU; skipped where no GPU exists (scripts/gpu_check.sh).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "gpu/nccl/nccl_reduction.h"
#include "gpu_test_util.h"
#include "mpi_test_util.h"
#include "quant/element_ops.h"
#include "gpu/gpu_ops.h"
#include "tierzero/flight_recorder.h"
#include "tierzero/mpi.h"
#include "tierzero/nccl.h"

namespace tierzero {
namespace {

// A device buffer of `n` elements of type t, filled and read on the
// calling thread's stream; set() waits for its copy, so that the
// communicator's own stream finds the values in place.
class Buffer {
 public:
  Buffer(std::size_t n, DType t) : n_(n), t_(t), p_(n * dtype_size(t) + 1) {}
  void* data() { return p_.data(); }
  void set(int rank) {
    std::vector<std::byte> h(n_ * dtype_size(t_));
    for (std::size_t i = 0; i < n_; ++i) test::store(t_, h.data(), i, test::value(rank, i, t_));
    gpu::to_device(p_.data(), h.data(), h.size());
    gpu::GpuContext::current().synchronize();
  }
  // The first `count` elements, as doubles.
  std::vector<double> get(std::size_t count) const {
    std::vector<std::byte> h(count * dtype_size(t_));
    gpu::to_host(h.data(), p_.data(), h.size());
    std::vector<double> v(count);
    for (std::size_t i = 0; i < count; ++i) v[i] = test::load(t_, h.data(), i);
    return v;
  }

 private:
  std::size_t n_;
  DType t_;
  gpu::DeviceArray<std::byte> p_;
};

// avg is NCCL's sum and one division on the communicator's stream (no GPU needed to see the mapping).
TEST(NcclReduction, AverageIsASumThenOneDivision) {
  EXPECT_EQ(nccl_reduction(ReduceOp::avg, DType::bf16).op, ncclSum);
  EXPECT_TRUE(nccl_reduction(ReduceOp::avg, DType::bf16).divide_after);
  EXPECT_EQ(nccl_reduction(ReduceOp::sum, DType::f16).op, ncclSum);
  EXPECT_FALSE(nccl_reduction(ReduceOp::sum, DType::f16).divide_after);
  EXPECT_THROW(nccl_reduction(ReduceOp::avg, DType::i8), CommError);
}

TEST(Nccl, EveryCollectiveInEveryType) {
  TZ_NEED_GPU();
  const int w = test::world_size();
  auto world = nccl_world(Topology::flat(w));
  const int me = world->rank();
  const std::size_t n = 1001;
  for (DType t : test::all_dtypes()) {
    Buffer send(n * w, t), recv(n * w, t);
    send.set(me);
    auto sum_of = [&](std::size_t i) {
      double s = 0;
      for (int r = 0; r < w; ++r) s += test::value(r, i, t);
      return s;
    };
    world->all_gather(send.data(), recv.data(), n, t);
    auto out = recv.get(n * w);
    for (int j = 0; j < w; ++j)
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[j * n + i], test::value(j, i, t)) << dtype_name(t);
    world->reduce_scatter(send.data(), recv.data(), n, t, ReduceOp::sum);
    out = recv.get(n);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], sum_of(me * n + i)) << dtype_name(t);
    world->all_reduce(send.data(), recv.data(), n * w, t, ReduceOp::sum);
    out = recv.get(n * w);
    for (std::size_t i = 0; i < n * w; ++i) ASSERT_EQ(out[i], sum_of(i)) << dtype_name(t);
    if (is_float(t)) {  // avg: the exact sum divided once, the CPU's bits (ncclAvg's pre-scaling by 1/w is not)
      std::vector<std::byte> want(n * dtype_size(t));
      for (std::size_t i = 0; i < n; ++i) test::store(t, want.data(), i, sum_of(i));
      host_element_ops().divide(want.data(), n, t, w);
      world->all_reduce(send.data(), recv.data(), n, t, ReduceOp::avg);
      out = recv.get(n);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], test::load(t, want.data(), i)) << dtype_name(t) << " " << i;
      world->reduce_scatter(send.data(), recv.data(), n, t, ReduceOp::avg);
      want.assign(n * dtype_size(t), std::byte{0});
      for (std::size_t i = 0; i < n; ++i) test::store(t, want.data(), i, sum_of(me * n + i));
      host_element_ops().divide(want.data(), n, t, w);
      out = recv.get(n);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], test::load(t, want.data(), i)) << dtype_name(t) << " " << i;
    }
    world->all_to_all(send.data(), recv.data(), n, t);
    out = recv.get(n * w);
    for (int j = 0; j < w; ++j)
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[j * n + i], test::value(j, me * n + i, t)) << dtype_name(t);
    // all_to_allv: member j sends j+1 elements to everyone, from offset 0.
    std::vector<std::size_t> sc(w, me + 1), sd(w, 0), rc(w), rd(w);
    for (int j = 0; j < w; ++j) rc[j] = j + 1, rd[j] = j == 0 ? 0 : rd[j - 1] + rc[j - 1];
    world->iall_to_allv(send.data(), sc, sd, recv.data(), rc, rd, t).wait();
    out = recv.get(rd[w - 1] + rc[w - 1]);
    for (int j = 0; j < w; ++j)
      for (std::size_t i = 0; i < rc[j]; ++i) ASSERT_EQ(out[rd[j] + i], test::value(j, i, t)) << dtype_name(t);
    send.set(me);
    world->broadcast(send.data(), n, t, w - 1);
    out = send.get(n);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], test::value(w - 1, i, t)) << dtype_name(t);
  }
  world->barrier();
}

TEST(Nccl, SplitGroupsNonBlockingRequestsAndTraffic) {
  TZ_NEED_GPU();
  const int w = test::world_size();
  const Topology topo = w % 2 == 0 ? Topology::parse("package=2,world=" + std::to_string(w / 2), w) : Topology::flat(w);
  auto world = nccl_world(topo);
  const int me = world->rank();
  const std::size_t n = 4096;
  Buffer send(n, DType::f32), recv(n * w, DType::f32);
  send.set(me);
  for (Level l : topo.levels()) {
    auto group = world->hop(l);  // peers differ only at level l: all traffic is charged there
    ASSERT_EQ(group->size(), topo.fanout(l));
    const auto before = world->traffic().snapshot();
    Request r = group->iall_gather(send.data(), recv.data(), n, DType::f32);
    r.wait();
    EXPECT_TRUE(r.test());
    const auto out = recv.get(n * group->size());
    for (int j = 0; j < group->size(); ++j)
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[j * n + i], test::value(group->world_rank(j), i, DType::f32));
    std::array<std::uint64_t, kNumLevels> want{};
    want[static_cast<int>(l)] = n * sizeof(float) * (group->size() - 1);
    test::expect_traffic(*world, before, want, std::string("all-gather over ") + std::string(level_name(l)));
  }
}

// The flight recorder (tierzero/flight_recorder.h) sees the same collectives
// on the NCCL world as on an MPI world: op, bytes, dtype, tags, and times.
TEST(Nccl, FlightRecordsTheSameFieldsAsMpi) {
  TZ_NEED_GPU();
  const int w = test::world_size();
  const Topology topo = Topology::flat(w);
  auto nccl = nccl_world(topo);
  auto mpi = mpi_world(topo);
  const std::string dir = test::shared_temp_dir() + "/flight-nccl";
  start_flight_recorder(*nccl, {64, dir});
  const std::size_t n = 1024;
  Buffer send(n * w, DType::f32), recv(n * w, DType::f32);
  send.set(nccl->rank());
  std::vector<float> host_send(n * w, 1.0f), host_recv(n * w);
  {
    const FlightPhaseScope tagged(FlightPhase::reduction, 4);
    nccl->all_gather(send.data(), recv.data(), n, DType::f32);
    nccl->reduce_scatter(send.data(), recv.data(), n, DType::f32, ReduceOp::sum);
    mpi->all_gather(host_send.data(), host_recv.data(), n, DType::f32);
    mpi->reduce_scatter(host_send.data(), host_recv.data(), n, DType::f32, ReduceOp::sum);
  }
  ASSERT_TRUE(flight_dump("test", FlightDumpKind::request));
  std::ifstream in(flight_dump_path());
  const nlohmann::json d = nlohmann::json::parse(in);
  std::vector<nlohmann::json> of_nccl, of_mpi;
  for (const nlohmann::json& r : d["records"]) {
    if (r["comm"] == nccl->flight_id()) of_nccl.push_back(r);
    if (r["comm"] == mpi->flight_id()) of_mpi.push_back(r);
  }
  ASSERT_EQ(of_nccl.size(), 2u);
  ASSERT_EQ(of_mpi.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    for (const char* field : {"seq", "op", "bytes", "dtype", "bits", "queue", "job", "step", "micro", "phase", "unit"})
      EXPECT_EQ(of_nccl[i][field], of_mpi[i][field]) << field;
    EXPECT_GT(of_nccl[i]["completed_ns"].get<std::int64_t>(), 0);
    EXPECT_LE(of_nccl[i]["started_ns"].get<std::int64_t>(), of_nccl[i]["completed_ns"].get<std::int64_t>());
  }
  EXPECT_EQ(of_nccl[0]["op"], "all_gather");
  EXPECT_EQ(of_nccl[1]["op"], "reduce_scatter");
  EXPECT_EQ(d["communicators"][nccl->flight_id()]["backend"], "nccl");
  EXPECT_EQ(d["communicators"][mpi->flight_id()]["backend"], mpi_initialized() ? "mpi" : "self");  // a world of one has no MPI
  start_flight_recorder(*nccl, {0, ""});
}

}  // namespace
}  // namespace tierzero
