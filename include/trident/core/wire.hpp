// trident/core/wire.hpp: the bytes that crossed the links between nodes, read off the network
// interfaces' counters (/sys/class/net/*/statistics, Linux).
//
// Each node's interfaces other than loopback are read once, by the node's lowest rank
// (MPI_COMM_TYPE_SHARED). On the emulated cluster of cmake/cluster.sh a node's only such
// interface is its veth to the switch, so the figure is exactly what crossed between nodes
// (frames: payload plus Ethernet, IP and TCP headers, and TCP's acknowledgements). On a real
// machine it also counts whatever else the NICs carried.
#pragma once

#include <dirent.h>

#include <fstream>
#include <string>

#include "comm.hpp"

namespace trident {

struct WireBytes {
  double sent = 0, received = 0;
};

// This process' network namespace: the counters of every interface but loopback, now.
inline WireBytes read_wire_bytes() {
  WireBytes w;
  DIR* dir = opendir("/sys/class/net");
  if (!dir) return w;
  auto counter = [](const std::string& path) {
    std::ifstream in(path);
    double v = 0;
    in >> v;
    return v;
  };
  while (const dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name == "." || name == ".." || name == "lo") continue;
    const std::string stats = "/sys/class/net/" + name + "/statistics/";
    w.sent += counter(stats + "tx_bytes");
    w.received += counter(stats + "rx_bytes");
  }
  closedir(dir);
  return w;
}

// Bytes all nodes of `world` have sent over their links so far, summed over the nodes: the same
// on every rank. Collective.
inline double world_wire_sent(const Comm& world) {
  const Comm node = node_comm(world);
  const double mine = node.rank() == 0 ? read_wire_bytes().sent : 0.0;
  return world.all_reduce_value(mine);
}

}  // namespace trident
