// trident/core/shared_window.hpp: one array per rank in an MPI-3 shared window, for the ranks of
// one node: every rank reads every rank's array in place (MPI_Win_allocate_shared). The
// segment of shared_memory.hpp lives in one; so do the DP gradients of ZeRO-0/1 and the
// parameters of ZeRO-1/2 when the DP group shares a node (zero/detail/unit_window.hpp), which
// the DP collectives then use where they lie (shm_collectives.hpp: reduce_in_window,
// gather_in_window).
#pragma once

#include <mpi.h>

#include <cstring>
#include <exception>
#include <vector>

#include "error.hpp"

namespace trident {

class SharedWindow {
 public:
  // Collective over `comm`, whose ranks all share one node's memory: `bytes` per rank, zeroed.
  explicit SharedWindow(MPI_Comm comm, std::size_t bytes) : bytes_(bytes) {
    int size = 0;
    MPI_Comm_size(comm, &size);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");  // each rank's region near its core
    char* mine = nullptr;
    check_mpi(MPI_Win_allocate_shared(static_cast<MPI_Aint>(bytes), 1, info, comm, &mine, &win_),
              "MPI_Win_allocate_shared");
    MPI_Info_free(&info);
    bases_.resize(static_cast<std::size_t>(size));
    for (int j = 0; j < size; ++j) {
      MPI_Aint got = 0;
      int unit = 0;
      check_mpi(MPI_Win_shared_query(win_, j, &got, &unit, &bases_[j]), "MPI_Win_shared_query");
    }
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win_);
    std::memset(mine, 0, bytes);
  }
  // Collective (MPI_Win_free). Skipped while an exception unwinds (other ranks may not come):
  // the window then stays until MPI_Finalize.
  ~SharedWindow() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized || std::uncaught_exceptions() > 0) return;
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
  }
  SharedWindow(const SharedWindow&) = delete;
  SharedWindow& operator=(const SharedWindow&) = delete;

  // Rank j's array (bytes() bytes), readable and writable by every rank of the group.
  template <class T>
  T* of(int j) const {
    return reinterpret_cast<T*>(bases_[static_cast<std::size_t>(j)]);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  MPI_Win win_ = MPI_WIN_NULL;
  std::vector<char*> bases_;
  std::size_t bytes_;
};

}  // namespace trident
