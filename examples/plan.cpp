// examples/plan: with ZeRO, why do we still need 3D parallelism? The cost model answers for a
// real cluster.
//
//   ./plan --preset gpt3-175b --gpus 1024 --gpus-per-node 8 --global-batch 1536
//   ./plan --preset gpt3-175b --gpus 1024 --tp 8 --pp 8 --dp 16     (a fixed mesh)
//   ./plan --preset gpt3-13b --seq 32768 --gpus 64 --global-batch 64  (long sequences: CP)
//   ./plan --layers 24 --hidden 2048 --heads 16 --vocab 51200 --seq 2048 --gpus 64
//   ./plan --zero-table --params 7.5e9 --dp 64                     (ZeRO paper, Table 1)
//
// Prints the best configurations by predicted step time, why the winner places each axis where
// it does, and the best pure ZeRO-3 configuration (TP = PP = 1) next to it. The cluster's
// defaults are a DGX A100 cluster (see plan/cluster.hpp for where each number comes from).
// Runs on rank 0 of any number of ranks; the others compute the same and stay quiet.
#include <cstdio>
#include <string>
#include <trident/io/cli.hpp>
#include <trident/models/gpt2/cli.hpp>
#include <trident/plan/plan.hpp>
#include <trident/trident.hpp>

using namespace trident;
using namespace trident::plan;

namespace {

double gb(double bytes) {
  return bytes / 1e9;
}

void print_zero_table(double psi, int nd, const Precision& p) {
  std::printf(
      "ZeRO model states per GPU (Rajbhandari et al. 2020, Table 1 and Figure 1)\n"
      "Psi = %.4g parameters, Nd = %d, bytes per parameter %g + %g + K = %g (%s)\n\n",
      psi, nd, p.param_bytes, p.grad_bytes, p.optimizer_bytes, p.name.c_str());
  const char* what[] = {"baseline data parallelism", "P_os: optimizer states",
                        "P_os+g: + gradients", "P_os+g+p: + parameters"};
  std::printf("stage  %-26s %10s %10s %10s %10s\n", "partitioned", "params", "grads", "optimizer",
              "per GPU");
  for (int stage = 0; stage <= 3; ++stage) {
    const ModelStateBytes s = model_state_bytes(psi, stage, nd, p);
    std::printf("%5d  %-26s %10s %10s %10s %7s GB\n", stage, what[stage],
                paper_gb(s.params).c_str(), paper_gb(s.grads).c_str(),
                paper_gb(s.optimizer).c_str(), paper_gb(s.total()).c_str());
  }
}

void print_header() {
  std::printf("%50s|%42s |%28s |%7s |%23s\n", "", "memory per GPU, GB", "GB per GPU per step", "",
              "seconds per step");
  std::printf(
      "%3s %3s %3s %3s %5s %4s %2s %4s %2s %2s %-9s|%7s %6s %6s %6s %6s %6s |%7s %6s %6s %6s "
      "|%6s |%7s %7s %7s\n",
      "#", "tp", "cp", "pp", "dp", "zero", "b", "m", "v", "sp", "recompute", "params", "grads",
      "optim", "zero3", "activ", "total", "TP", "CP", "PP", "DP", "bubble", "compute", "comm",
      "step");
}

void print_row(const std::string& label, const Candidate& x) {
  const Config& c = x.config;
  const Estimate& e = x.estimate;
  const MemoryBytes& mem = e.memory;
  std::printf(
      "%3s %3d %3d %3d %5d %4d %2d %4d %2d %2s %-9s|%7.1f %6.1f %6.1f %6.1f %6.1f %6.1f |"
      "%7.1f %6.1f %6.2f %6.1f |%5.1f%% |%7.3g %7.3g %7.3g\n",
      label.c_str(), c.tp, c.cp, c.pp, c.dp, c.zero, c.microbatch_size, c.microbatches,
      c.virtual_stages, c.sequence_parallel ? "y" : "n", to_string(c.recompute), gb(mem.params),
      gb(mem.grads), gb(mem.optimizer), gb(mem.zero3_buffers), gb(mem.activations), gb(mem.total()),
      gb(e.comm_bytes.tp), gb(e.comm_bytes.cp), gb(e.comm_bytes.pp), gb(e.comm_bytes.dp),
      100 * e.bubble_share, e.compute_s + e.bubble_s, e.comm_s(), e.step_s);
}

// The `top` best, leaving out a configuration with the mesh, microbatch size and predicted time
// of one already printed: it differs only in ZeRO stage or sequence parallelism, and needs more
// memory.
void print_best(const std::vector<Candidate>& found, int top) {
  print_header();
  std::vector<const Candidate*> shown;
  int hidden = 0;
  for (const Candidate& x : found) {
    if (static_cast<int>(shown.size()) == top) break;
    bool same = false;
    for (const Candidate* y : shown)
      same = same || (y->config.tp == x.config.tp && y->config.pp == x.config.pp &&
                      y->config.cp == x.config.cp &&
                      y->config.microbatch_size == x.config.microbatch_size &&
                      y->estimate.step_s == x.estimate.step_s);
    if (same) {
      ++hidden;
      continue;
    }
    shown.push_back(&x);
    print_row(std::to_string(shown.size()), x);
  }
  if (hidden)
    std::printf("(and %d with the mesh, microbatch size and time of a row above, more memory)\n",
                hidden);
}

const char* where(bool crosses) {
  return crosses ? "across nodes" : "inside a node";
}
const char* links(bool crosses) {
  return crosses ? "inter-node" : "intra-node";
}

void explain(const ModelSpec& m, const Candidate& best, const ClusterSpec& cl) {
  const Config& c = best.config;
  const Estimate& e = best.estimate;
  std::printf(
      "\nWhy #1 (rank = tp + TP*(cp + CP*(dp + DP*pp)): TP fills a node first, PP is "
      "slowest):\n");
  if (c.tp > 1)
    std::printf(
        "- TP=%d runs %s: %d all-reduces of b*s*h per layer per microbatch, %.0f GB per "
        "GPU per step, %.2f s at %.0f GB/s; over the %.0f GB/s network they would take "
        "%.1f s.\n",
        c.tp, where(e.crosses_nodes.tp), tp_all_reduces_per_layer(c.recompute), gb(e.comm_bytes.tp),
        e.tp_s, gb(link_bandwidth(cl, e.crosses_nodes.tp)), gb(cl.inter_node_bw),
        e.comm_bytes.tp / cl.inter_node_bw);
  if (c.cp > 1)
    std::printf(
        "- CP=%d runs %s: each GPU holds s/cp = %d tokens of every sequence, so its activations "
        "are 1/%d of CP=1's; attention's keys and values go round the ring, 3 (cp-1) blocks of "
        "2*b*(s/cp)*h/t per layer per microbatch (Liu et al. 2023): %.2f GB per GPU per step, "
        "%.2f s if not hidden behind the blocks' computation.\n",
        c.cp, where(e.crosses_nodes.cp), m.seq / c.cp, c.cp, gb(e.comm_bytes.cp), e.cp_s);
  if (c.pp > 1)
    std::printf(
        "- PP=%d runs %s, but sends only one activation (b*s*h/t) per microbatch per "
        "boundary each way: %.2f GB per GPU per step, %.2f s. Its price is the bubble of %s, "
        "%s with p=%d, m=%d, v=%d (%s) = %.1f%% of the step, %.2f s.\n",
        c.pp, where(e.crosses_nodes.pp), gb(e.comm_bytes.pp), e.pp_s, pp::to_string(c.schedule),
        pp::traits(c.schedule).bubble_form, c.pp, c.microbatches, c.virtual_stages,
        pp::traits(c.schedule).bubble_source, 100 * e.bubble_share, e.bubble_s);
  if (c.dp * c.cp > 1)
    std::printf(
        "- DP=%d%s with ZeRO-%d runs %s over a shard of %.3g parameters (1/(TP*PP) of the "
        "model): %.1f GB per GPU per step, %.2f s.\n",
        c.dp, c.cp > 1 ? (" (x CP=" + std::to_string(c.cp) + ": the same parameters)").c_str() : "",
        c.zero, where(e.crosses_nodes.dp), static_cast<double>(e.shard_parameters),
        gb(e.comm_bytes.dp), e.dp_s);
  std::printf(
      "- memory %.1f of %.0f GB: model states %.1f, activations %.1f (recompute %s, "
      "sequence parallel %s).\n",
      gb(e.memory.total()), gb(cl.memory_bytes),
      gb(e.memory.params + e.memory.grads + e.memory.optimizer), gb(e.memory.activations),
      to_string(c.recompute), c.sequence_parallel ? "on" : "off");
}

// Why no configuration fits: the one that needs the least memory, and how much.
std::string nothing_fits(const ModelSpec& m, const ClusterSpec& cl, int batch, const Precision& p,
                         Search search) {
  search.keep_unfit = true;
  const auto all = rank_configurations(m, cl, batch, p, search);
  if (all.empty())
    return "no valid configuration of " + m.name + " on " + std::to_string(cl.gpus) +
           " GPUs for a global batch of " + std::to_string(batch);
  const Candidate* least = &all.front();
  for (const Candidate& x : all)
    if (x.estimate.memory.total() < least->estimate.memory.total()) least = &x;
  char text[256];
  std::snprintf(text, sizeof text,
                "no configuration fits in %.0f GB per GPU; the smallest (TP=%d CP=%d PP=%d DP=%d "
                "ZeRO-%d b=%d recompute %s) needs %.1f GB",
                gb(cl.memory_bytes), least->config.tp, least->config.cp, least->config.pp,
                least->config.dp, least->config.zero, least->config.microbatch_size,
                to_string(least->config.recompute), gb(least->estimate.memory.total()));
  return text;
}

// The best 3D configuration and the best pure ZeRO-3 one at the same batch, side by side.
void contrast_with_zero3(const ModelSpec& m, const ClusterSpec& cl, int batch, const Precision& p) {
  std::printf("\nWith ZeRO, why 3D? Pure ZeRO-3 on all %d GPUs (TP = PP = 1, DP = %d):\n", cl.gpus,
              cl.gpus);
  const int zbatch = (batch + cl.gpus - 1) / cl.gpus * cl.gpus;
  if (zbatch != batch)
    std::printf(
        "- the global batch of %d is not a multiple of DP=%d: each GPU needs whole "
        "sequences, so both sides below use %d.\n",
        batch, cl.gpus, zbatch);
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
    Config c{1, 1, cl.gpus, 3, 1, zbatch / cl.gpus};
    c.recompute = r;
    const Estimate e = estimate(m, cl, c, p);
    std::printf("- b=1, recompute %-9s: %6.1f GB per GPU (activations %.1f) -> %s\n", to_string(r),
                gb(e.memory.total()), gb(e.memory.activations), e.fits ? "fits" : "does not fit");
  }
  Search zero3;
  zero3.tp = zero3.pp = zero3.cp = 1;
  zero3.dp = cl.gpus;
  zero3.zero_stages = {3};
  const auto z = rank_configurations(m, cl, zbatch, p, zero3);
  const auto three_d = rank_configurations(m, cl, zbatch, p);
  if (three_d.empty()) return;
  print_header();
  print_row("3D", three_d.front());
  if (z.empty()) {
    std::printf("No pure ZeRO-3 configuration fits in %.0f GB.\n", gb(cl.memory_bytes));
    return;
  }
  print_row("Z3", z.front());
  const Estimate& e = z.front().estimate;
  std::printf(
      "- per microbatch (m = %d) ZeRO-3 gathers the whole %.3g-parameter model twice "
      "and reduce-scatters its gradients over the %s links (%.0f GB/s): %.0f GB per GPU per "
      "step, %.3g s, against %.3g s of compute.\n",
      z.front().config.microbatches, static_cast<double>(e.shard_parameters),
      links(e.crosses_nodes.dp), gb(link_bandwidth(cl, e.crosses_nodes.dp)), gb(e.comm_bytes.dp),
      e.dp_s, e.compute_s + e.bubble_s);
  std::printf(
      "- predicted step: ZeRO-3 %.3g s, 3D %.3g s (%.2fx); even if all of ZeRO-3's "
      "traffic hid behind its compute, %.3g s.\n",
      e.step_s, three_d.front().estimate.step_s, e.step_s / three_d.front().estimate.step_s,
      e.overlapped_step_s());
}

struct Flags {
  std::string preset = "gpt3-175b", precision = "mixed";
  ModelSpec overrides;  // a field left 0 keeps the preset's
  ClusterSpec cluster;
  double memory_gb = gb(cluster.memory_bytes), intra = gb(cluster.intra_node_bw),
         inter = gb(cluster.inter_node_bw), peak_tflops = cluster.peak_flops / 1e12, params = 7.5e9;
  int batch = 1536, top = 10;
  Search search;
  bool zero_table = false;
};

void add_flags(cli::App& app, Flags& f) {
  ModelSpec& o = f.overrides;
  ClusterSpec& cl = f.cluster;
  app.add_option("--preset", f.preset,
                 "model: gpt2, gpt2-xl, gpt3-1.3b, gpt3-13b, "
                 "gpt3-175b, gpt-1t")
      ->capture_default_str();
  app.add_option("--layers", o.layers, "override the preset's layers");
  app.add_option("--hidden", o.hidden, "override the preset's hidden size");
  app.add_option("--heads", o.heads, "override the preset's attention heads");
  app.add_option("--vocab", o.vocab, "override the preset's vocabulary");
  app.add_option("--seq", o.seq, "override the preset's sequence length");
  app.add_option("--gpus", cl.gpus, "GPUs in all")->capture_default_str();
  app.add_option("--gpus-per-node", cl.gpus_per_node, "GPUs per node")->capture_default_str();
  app.add_option("--memory-gb", f.memory_gb, "GPU memory, 1e9 bytes")->capture_default_str();
  app.add_option("--intra-gbps", f.intra, "GB/s per GPU inside a node")->capture_default_str();
  app.add_option("--inter-gbps", f.inter, "GB/s per GPU between nodes")->capture_default_str();
  app.add_option("--peak-tflops", f.peak_tflops, "peak TFLOP/s per GPU")->capture_default_str();
  app.add_option("--efficiency", cl.efficiency, "fraction of peak")->capture_default_str();
  app.add_option("--global-batch", f.batch, "sequences per step")->capture_default_str();
  app.add_option("--precision", f.precision, "mixed or fp32")->capture_default_str();
  app.add_option("--tp", f.search.tp, "fix tensor parallelism");
  app.add_option("--pp", f.search.pp, "fix pipeline parallelism");
  app.add_option("--cp", f.search.cp, "fix context parallelism (1: none)");
  app.add_option("--dp", f.search.dp, "fix data parallelism (Nd of --zero-table)");
  app.add_option("--top", f.top, "configurations to print")->capture_default_str();
  app.add_flag("--zero-table", f.zero_table, "print ZeRO's model-state table for --params, --dp");
  app.add_option("--params", f.params, "Psi for --zero-table")->capture_default_str();
}

// The preset with the flags' overrides: "(modified)", or "custom" when every field is given.
ModelSpec chosen_model(const Flags& f) {
  const ModelSpec& o = f.overrides;
  ModelSpec m = preset(f.preset);
  const std::pair<int*, int> overrides[] = {{&m.layers, o.layers},
                                            {&m.hidden, o.hidden},
                                            {&m.heads, o.heads},
                                            {&m.vocab, o.vocab},
                                            {&m.seq, o.seq}};
  for (const auto& [field, value] : overrides)
    if (value != 0) {
      *field = value;
      m.name = f.preset + " (modified)";
    }
  if (o.layers && o.hidden && o.heads && o.vocab && o.seq) m.name = "custom";
  return m;
}

// The cluster with the flags' units (GB, GB/s, TFLOP/s) turned into bytes and FLOP/s.
ClusterSpec chosen_cluster(const Flags& f) {
  ClusterSpec cl = f.cluster;
  cl.memory_bytes = f.memory_gb * 1e9;
  cl.intra_node_bw = f.intra * 1e9;
  cl.inter_node_bw = f.inter * 1e9;
  cl.peak_flops = f.peak_tflops * 1e12;
  return cl;
}

void print_setup(const ModelSpec& m, const ClusterSpec& cl, const Flags& f, const Precision& p) {
  std::printf(
      "model %s: L=%d h=%d a=%d V=%d s=%d, %.4g parameters (Narayanan et al.: %.4g)\n"
      "cluster: %d GPUs, %d per node, %.0f GB each, %.0f GB/s inside a node, %.0f GB/s "
      "between, %.0f TFLOP/s x %.2f\n"
      "global batch %d sequences, %s precision; nothing overlaps in the time model\n\n",
      m.name.c_str(), m.layers, m.hidden, m.heads, m.vocab, m.seq,
      static_cast<double>(parameter_count(m)), parameters_formula(m), cl.gpus, cl.gpus_per_node,
      f.memory_gb, f.intra, f.inter, f.peak_tflops, cl.efficiency, f.batch, p.name.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  return run_main(argc, argv, [](int argc, char** argv) {
    const Comm world = Comm::world();
    cli::App app{
        "Rank 3D-parallel + ZeRO configurations of a GPT model on a cluster by "
        "predicted step time."};
    Flags f;
    add_flags(app, f);
    parse_command_line(app, argc, argv, world);

    const Precision p = Precision::parse(f.precision);
    require(f.top >= 1, "--top must be at least 1, got " + std::to_string(f.top));
    const bool quiet = world.rank() != 0;
    if (f.zero_table) {
      require(f.params > 0 && f.search.dp >= 1, "--zero-table needs --params > 0 and --dp >= 1");
      if (!quiet) print_zero_table(f.params, f.search.dp, p);
      return 0;
    }
    const ModelSpec m = chosen_model(f);
    const ClusterSpec cl = chosen_cluster(f);
    const auto found = rank_configurations(m, cl, f.batch, p, f.search);
    if (found.empty()) fail(nothing_fits(m, cl, f.batch, p, f.search));
    if (quiet) return 0;
    print_setup(m, cl, f, p);
    std::printf("%zu configurations fit; the best by predicted step time:\n", found.size());
    print_best(found, f.top);
    explain(m, found.front(), cl);
    if (!f.search.tp && !f.search.pp && !f.search.dp && !f.search.cp)
      contrast_with_zero3(m, cl, f.batch, p);
    return 0;
  });
}
