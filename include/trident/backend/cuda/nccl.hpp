// trident/backend/cuda/nccl.hpp: NcclComm, one group's NCCL communicator, the `nccl` path of
// backend/device_comm.hpp (ranks on distinct GPUs, device to device).
//
// Made collectively over the group's MPI communicator: rank 0 draws a unique id
// (ncclGetUniqueId), MPI broadcasts it, every rank joins (ncclCommInitRank). Every operation runs
// on the backend's stream (stream.hpp), in order with the kernels that produce and read its
// buffers; a failure is one trident::Error naming the call and NCCL's text. Point-to-point
// messages between two ranks are matched in the order they are posted, without tags; several
// posted between group_start() and group_end() progress together (NCCL's grouped calls), which
// is how a pipeline's sends and receives avoid waiting on each other.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "../../core/bf16.hpp"
#include "../../core/comm.hpp"
#include "../../core/error.hpp"
#include "stream.hpp"

namespace trident::backend::cuda {

inline void check_nccl(ncclResult_t r, const char* call) {
  if (r != ncclSuccess)
    throw Error(std::string("NCCL: ") + call + " failed: " + ncclGetErrorString(r));
}

template <class T>
ncclDataType_t nccl_type() {
  if constexpr (std::is_same_v<T, float>) return ncclFloat32;
  if constexpr (std::is_same_v<T, double>) return ncclFloat64;
  if constexpr (std::is_same_v<T, bf16>) return ncclBfloat16;
  if constexpr (std::is_same_v<T, std::int32_t>) return ncclInt32;
  if constexpr (std::is_same_v<T, std::int64_t>) return ncclInt64;
  if constexpr (std::is_same_v<T, char> || std::is_same_v<T, unsigned char>) return ncclUint8;
  static_assert(std::is_arithmetic_v<T> || std::is_same_v<T, bf16>, "no NCCL type for T");
  return ncclUint8;
}

inline ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::max:
      return ncclMax;
    case ReduceOp::min:
      return ncclMin;
    default:
      return ncclSum;
  }
}

class NcclComm {
 public:
  // Collective over `group`.
  explicit NcclComm(const Comm& group) {
    ncclUniqueId id{};
    if (group.rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    group.broadcast(Span<char>(reinterpret_cast<char*>(&id), sizeof id), 0);
    check_nccl(ncclCommInitRank(&comm_, group.size(), id, group.rank()), "ncclCommInitRank");
  }
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  ~NcclComm() {
    if (comm_) ncclCommDestroy(comm_);
  }

  template <class T>
  void all_reduce(T* data, std::size_t n, ReduceOp op) {
    check_nccl(ncclAllReduce(data, data, n, nccl_type<T>(), nccl_op(op), comm_, stream()),
               "ncclAllReduce");
  }
  // in: (size * n) -> out: (n)
  template <class T>
  void reduce_scatter(const T* in, T* out, std::size_t n) {
    check_nccl(ncclReduceScatter(in, out, n, nccl_type<T>(), ncclSum, comm_, stream()),
               "ncclReduceScatter");
  }
  // in: (n) -> out: (size * n); in place when in is out + rank * n
  template <class T>
  void all_gather(const T* in, T* out, std::size_t n) {
    check_nccl(ncclAllGather(in, out, n, nccl_type<T>(), comm_, stream()), "ncclAllGather");
  }
  template <class T>
  void broadcast(T* data, std::size_t n, int root) {
    check_nccl(ncclBroadcast(data, data, n, nccl_type<T>(), root, comm_, stream()),
               "ncclBroadcast");
  }
  template <class T>
  void send(const T* data, std::size_t n, int peer) {
    check_nccl(ncclSend(data, n, nccl_type<T>(), peer, comm_, stream()), "ncclSend");
  }
  template <class T>
  void recv(T* data, std::size_t n, int peer) {
    check_nccl(ncclRecv(data, n, nccl_type<T>(), peer, comm_, stream()), "ncclRecv");
  }
  void group_start() { check_nccl(ncclGroupStart(), "ncclGroupStart"); }
  void group_end() { check_nccl(ncclGroupEnd(), "ncclGroupEnd"); }

 private:
  ncclComm_t comm_ = nullptr;
};

}  // namespace trident::backend::cuda
