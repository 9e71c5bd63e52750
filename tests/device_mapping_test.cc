// One rank per GPU: the node-local rank is the device; more ranks than
// GPUs on a node is refused with both counts.
#include "gpu/device_mapping.h"

#include <gtest/gtest.h>

namespace tierzero::gpu {
namespace {

TEST(DeviceMapping, TheNodeLocalRankIsTheDevice) {
  EXPECT_EQ(node_local_device(0, 1, 1), 0);
  EXPECT_EQ(node_local_device(3, 4, 8), 3);
  EXPECT_EQ(node_local_device(7, 8, 8), 7);
}

TEST(DeviceMapping, MoreRanksThanGpusIsAConfigErrorNamingBoth) {
  try {
    node_local_device(1, 2, 1);
    FAIL() << "two ranks were given one GPU";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message().find("2 ranks on this node but 1 GPU: tierzero runs one rank per GPU"), std::string::npos) << e.message();
  }
  EXPECT_THROW(node_local_device(0, 9, 8), ConfigError);
  EXPECT_THROW(node_local_device(0, 1, 0), ConfigError);
  EXPECT_THROW(node_local_device(4, 4, 8), ConfigError);
}

}  // namespace
}  // namespace tierzero::gpu
