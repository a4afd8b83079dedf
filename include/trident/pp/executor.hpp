// trident/pp/executor.hpp: one stage's schedule (schedule.hpp) run over point-to-point messages
// between pipeline ranks, on a backend B.
//
// The executor moves activations and their gradients and never looks inside a layer: the
// stage is anything with
//     forward(mb, chunk, const T* input, T* output)      input null on the first virtual stage,
//                                                         output null on the last
//     backward(mb, chunk, const T* doutput, T* dinput, nn::BackwardPart part, bool last)
//                                  likewise; part: both (fused backward), input (zero-bubble's
//                                  B) or weight (W: no doutput, no dinput); last: the chunk's
//                                  last weight-gradient pass of the step
// Activations and their gradients are in B's memory and travel through the pipeline group's
// DeviceComm<B> (MPI on host memory, host staging on a device). Every receive of the step is
// posted at the start (into its own buffer) and every send is nonblocking, so transfers overlap
// compute; the executor waits on a receive only when the schedule needs its data. Messages are
// told apart by tag: (receiving chunk, microbatch, direction). On the nccl path (NCCL's
// point-to-point: no tags, matched in order, a send waits for its receive) each run of
// consecutive sends and receives of the list is posted as one group instead, where it stands
// (grouped_p2p.hpp says which schedules allow it; the trainer gives the others host staging).
// With verbose on, every send and receive is printed with an arrow.
#pragma once

#include <cstdio>
#include <map>
#include <tuple>
#include <vector>

#include "../backend/cpu/cpu.hpp"
#include "../backend/device_comm.hpp"
#include "../core/comm.hpp"
#include "../core/memory.hpp"
#include "../core/message_tags.hpp"
#include "schedule.hpp"
#include "timeline.hpp"

namespace trident::pp {

template <class T, class B = backend::Cpu>
class Executor {
 public:
  // pp: the pipeline group (rank = stage) on B's memory; actions: this stage's list from
  // make_schedule; placement: where the chunks sit (placement.hpp; chunk_map(spec).placement).
  Executor(const backend::DeviceComm<B>& pp, std::vector<Action> actions, int microbatches,
           int chunks, std::size_t activation_size, bool verbose = false,
           ChunkPlacement placement = ChunkPlacement::looped)
      : pp_(pp),
        actions_(std::move(actions)),
        m_(microbatches),
        map_{placement, pp.size(), chunks},
        size_(activation_size),
        verbose_(verbose) {
    for (std::size_t i = 0; i < actions_.size(); ++i)
      if (actions_[i].op == Op::backward || actions_[i].op == Op::backward_weight)
        last_backward_[actions_[i].chunk] = i;
  }

  // Runs one step; returns this rank's measured intervals, in seconds since `origin`.
  template <class Stage>
  std::vector<Interval> run(Stage& stage, double origin) {
    Step step{origin, {}, {}, {}};
    const bool grouped = pp_.path() == backend::CollectivePath::nccl;
    if (!grouped) post_receives(step);
    for (std::size_t i = 0; i < actions_.size(); ++i) {
      const Action& a = actions_[i];
      flight_recorder().set_microbatch(a.microbatch);  // stamps this action's calls
      const double t0 = step.now();
      if (grouped && !is_compute(a.op))
        i = post_group(step, i, t0) - 1;
      else if (is_recv(a.op))
        receive(step, a, t0);
      else if (is_send(a.op))
        send(step, a, t0);
      else
        compute(stage, step, a, i, t0);
      free_sent(step);
    }
    step.outbox.clear();  // waits for the last sends (NCCL's: done in stream order)
    flight_recorder().set_microbatch(-1);
    return std::move(step.intervals);
  }

 private:
  using Key = std::tuple<int, int, int>;  // op, microbatch, chunk
  struct Message {
    backend::DeviceBuffer<T, B> data;
    backend::DeviceRequest request;
  };
  // One run's state: the clock's origin, the messages in flight and the measured intervals.
  struct Step {
    double origin;
    std::map<Key, Message> inbox, outbox;
    std::vector<Interval> intervals;
    double now() const { return trident::detail::now_seconds() - origin; }
  };
  static Key key(Op op, int mb, int chunk) { return {static_cast<int>(op), mb, chunk}; }

  // Every receive of the step, posted at its start (MPI_Irecv into its own buffer).
  void post_receives(Step& step) const {
    for (const Action& a : actions_)
      if (is_recv(a.op)) {
        flight_recorder().set_microbatch(a.microbatch);
        Message& msg = step.inbox[key(a.op, a.microbatch, a.chunk)];
        msg.data.allocate(MemoryKind::buffers, size_, Fill::none);  // the receive writes all
        msg.request = pp_.irecv(msg.data.data(), size_, a.peer, tag(a.op, a.microbatch, a.chunk));
      }
  }
  void record(Step& step, const Action& a, IntervalKind kind, double t0) const {
    step.intervals.push_back({pp_.rank(), kind, a.microbatch, a.chunk, t0, step.now()});
  }
  // Waits for a posted receive: its data stays in the inbox until its compute consumes it.
  void receive(Step& step, const Action& a, double t0) const {
    step.inbox.at(key(a.op, a.microbatch, a.chunk)).request.wait();
    say(a, "<--");
    record(step, a, IntervalKind::recv, t0);
  }
  // NCCL's grouped point-to-point: the sends and receives from action `first` to the next
  // compute, posted as one group (the sends' data from the outbox, the receives' into the
  // inbox). Returns the index after the group.
  std::size_t post_group(Step& step, std::size_t first, double t0) const {
    std::size_t end = first;
    while (end < actions_.size() && !is_compute(actions_[end].op)) ++end;
    pp_.group_start();
    for (std::size_t i = first; i < end; ++i) {
      const Action& a = actions_[i];
      if (is_send(a.op)) {
        pp_.nccl_send(step.outbox.at(key(a.op, a.microbatch, a.chunk)).data.data(), size_, a.peer);
      } else {
        Message& msg = step.inbox[key(a.op, a.microbatch, a.chunk)];
        msg.data.allocate(MemoryKind::buffers, size_, Fill::none);
        pp_.nccl_recv(msg.data.data(), size_, a.peer);
      }
    }
    pp_.group_end();
    for (std::size_t i = first; i < end; ++i) {
      const Action& a = actions_[i];
      say(a, is_send(a.op) ? "-->" : "<--");
      record(step, a, is_send(a.op) ? IntervalKind::send : IntervalKind::recv, t0);
      // a sent buffer may go: anything that reuses it comes after the send in stream order
      if (is_send(a.op)) step.outbox.erase(key(a.op, a.microbatch, a.chunk));
    }
    return end;
  }
  // Starts the send of what the compute before it wrote to the outbox.
  void send(Step& step, const Action& a, double t0) const {
    Message& msg = step.outbox.at(key(a.op, a.microbatch, a.chunk));
    const int receiver = receiving_chunk(a.op, a.chunk);
    msg.request = pp_.isend(msg.data.data(), size_, a.peer, tag(a.op, a.microbatch, receiver));
    say(a, "-->");
    record(step, a, IntervalKind::send, t0);
  }
  // A forward, backward or B reads its received input and writes what it sends into the
  // outbox; W reads and writes no message. i: the action's index.
  template <class Stage>
  void compute(Stage& stage, Step& step, const Action& a, std::size_t i, double t0) const {
    const bool last = a.op != Op::forward && last_backward_.at(a.chunk) == i;
    if (a.op == Op::backward_weight) {
      stage.backward(a.microbatch, a.chunk, nullptr, nullptr, nn::BackwardPart::weight, last);
      record(step, a, IntervalKind::weight, t0);
      return;
    }
    const bool fwd = a.op == Op::forward;
    const Op in_op = fwd ? Op::recv_forward : Op::recv_backward;
    const Op out_op = fwd ? Op::send_forward : Op::send_backward;
    auto in = step.inbox.find(key(in_op, a.microbatch, a.chunk));
    const T* input = in == step.inbox.end() ? nullptr : in->second.data.data();
    T* output = nullptr;
    if (sends(out_op, a.microbatch, a.chunk)) {
      Message& msg = step.outbox[key(out_op, a.microbatch, a.chunk)];
      msg.data.allocate(MemoryKind::buffers, size_);
      output = msg.data.data();
    }
    if (fwd)
      stage.forward(a.microbatch, a.chunk, input, output);
    else
      stage.backward(a.microbatch, a.chunk, input, output, backward_part(a.op), last);
    if (in != step.inbox.end()) step.inbox.erase(in);  // the received data is consumed
    record(step, a, fwd ? IntervalKind::forward : IntervalKind::backward, t0);
  }
  // Frees the buffers whose sends have completed.
  static void free_sent(Step& step) {
    for (auto it = step.outbox.begin(); it != step.outbox.end();)
      it = it->second.request.active() && it->second.request.test() ? step.outbox.erase(it)
                                                                    : std::next(it);
  }

  bool sends(Op op, int mb, int chunk) const {
    for (const Action& a : actions_)
      if (a.op == op && a.microbatch == mb && a.chunk == chunk) return true;
    return false;
  }
  // The chunk on the other side: virtual stage g sends forward to g + 1 and backward to g - 1.
  int receiving_chunk(Op op, int chunk) const {
    return map_.chunk(map_.virtual_stage(chunk, pp_.rank()) + (op == Op::send_forward ? 1 : -1));
  }
  int tag(Op op, int mb, int receiver_chunk) const {
    const bool backward = op == Op::recv_backward || op == Op::send_backward;
    return message_tags::pipeline_tag(receiver_chunk, mb, m_, backward);
  }
  void say(const Action& a, const char* arrow) const {
    if (!verbose_) return;
    const bool fwd = a.op == Op::send_forward || a.op == Op::recv_forward;
    std::printf("[stage %d] %s %s mb %d chunk %d %s stage %d\n", pp_.rank(),
                is_send(a.op) ? "send" : "recv", fwd ? "activation" : "gradient  ", a.microbatch,
                a.chunk, arrow, a.peer);
    std::fflush(stdout);
  }

  backend::DeviceComm<B> pp_;
  std::vector<Action> actions_;
  int m_;
  ChunkMap map_;
  std::size_t size_;
  bool verbose_;
  std::map<int, std::size_t> last_backward_;  // chunk -> index of its last backward (or W)
};

}  // namespace trident::pp
