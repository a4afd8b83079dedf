// trident/mesh/device_mesh.hpp: a Mesh's groups with their collectives on backend B's memory.
//
// B::attach(world) binds this rank to its device (a GPU: local rank r on GPU r mod n) and says
// which CollectivePath the run takes (backend/collective_path.hpp): MPI on host memory, NCCL for
// ranks on distinct GPUs, host staging otherwise; the same on every rank. Each group of the mesh
// then gets a DeviceComm<B> along that path (with NCCL, one communicator per group, made in the
// same order on every rank: tp, cp, pp, dp, dp_cp, the embedding group; cp and dp_cp only when
// CP > 1, dp_cp being dp's otherwise). The pipeline group may take
// another path than the rest (pp/grouped_p2p.hpp: a schedule whose messages do not suit NCCL's
// point-to-point stages them through the host). Collective over the mesh's world.
#pragma once

#include "../backend/device_comm.hpp"
#include "mesh.hpp"

namespace trident {

template <class B>
class DeviceMesh {
 public:
  DeviceMesh(const Mesh<>& mesh, backend::CollectivePath path) : DeviceMesh(mesh, path, path) {}
  DeviceMesh(const Mesh<>& mesh, backend::CollectivePath path, backend::CollectivePath pp_path)
      : path_(path),
        tp_(mesh.tp(), path),
        cp_(mesh.shape().cp > 1 ? backend::DeviceComm<B>(mesh.cp(), path)
                                : backend::DeviceComm<B>()),
        pp_(mesh.pp(), pp_path),
        dp_(mesh.dp(), path),
        dp_cp_(mesh.shape().cp > 1 ? backend::DeviceComm<B>(mesh.dp_cp(), path) : dp_),
        embedding_(mesh.embedding().valid() ? backend::DeviceComm<B>(mesh.embedding(), path)
                                            : backend::DeviceComm<B>()) {}

  backend::CollectivePath path() const { return path_; }
  const backend::DeviceComm<B>& tp() const { return tp_; }
  // The context-parallel ring; not valid() when CP = 1.
  const backend::DeviceComm<B>& cp() const { return cp_; }
  const backend::DeviceComm<B>& pp() const { return pp_; }
  const backend::DeviceComm<B>& dp() const { return dp_; }
  // The gradient reduction's and ZeRO's group (mesh/mesh.hpp): dp() when CP = 1.
  const backend::DeviceComm<B>& dp_cp() const { return dp_cp_; }
  // The first and the last pipeline stage's tied-embedding group; not valid() elsewhere.
  const backend::DeviceComm<B>& embedding() const { return embedding_; }

 private:
  backend::CollectivePath path_;
  backend::DeviceComm<B> tp_, cp_, pp_, dp_, dp_cp_, embedding_;
};

}  // namespace trident
