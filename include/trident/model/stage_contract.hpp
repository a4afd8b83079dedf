// trident/model/stage_contract.hpp: the stage contract of model/model.hpp, enforced where a
// model's own code runs. A DecoderStage names the model, the part and the pass around every
// call into a part (ContractScope); a part that reads a null pointer there (the parameters in
// zero-bubble's W pass, say) ends the process with a sentence naming the three and what the
// contract gives in that pass, and exit status 1 — not a bare segmentation fault.
//
// The report runs in a SIGSEGV handler: async-signal-safe (write(2) of fixed texts, _exit), and
// only for a fault at a near-null address while a scope is open; any other fault goes to the
// handler installed before (the emulated device's, or the default action).
#pragma once

#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <typeinfo>

#include "../nn/backward_part.hpp"

#if defined(__GNUG__)
#include <cxxabi.h>
#endif

namespace trident {

// What a part is running: set by the stage around each call, read by the fault report.
struct PartCall {
  const char* model = "";  // e.g. "trident::llama::Model"
  const char* part = "";   // "Block::backward"
  const char* pass = "";   // "the W pass (weight gradients)"
  const char* given = "";  // the contract in that pass, e.g. "w[i] == null, dx == null"
};

// M's name for messages: M::kName when the model declares it, else its C++ type.
template <class M, class = void>
struct model_name {
  static std::string get() {
    const char* raw = typeid(M).name();
#if defined(__GNUG__)
    int status = 0;
    char* text = abi::__cxa_demangle(raw, nullptr, nullptr, &status);
    if (status == 0 && text) {
      std::string out(text);
      std::free(text);
      return out;
    }
#endif
    return raw;
  }
};
template <class M>
struct model_name<M, std::void_t<decltype(M::kName)>> {
  static std::string get() { return M::kName; }
};

namespace contract_detail {
inline const PartCall*& current() {
  static const PartCall* call = nullptr;  // parts run on the rank's main thread
  return call;
}
inline struct sigaction& previous() {
  static struct sigaction before {};
  return before;
}
inline void say(const char* s) {
  std::size_t n = 0;
  while (s[n]) ++n;
  [[maybe_unused]] const ssize_t w = write(2, s, n);
}
inline void report(int sig, siginfo_t* info, void* context) {
  const PartCall* c = current();
  const auto address = reinterpret_cast<std::uintptr_t>(info ? info->si_addr : nullptr);
  if (c && info && address < 65536) {
    say("trident: model ");
    say(c->model);
    say(": ");
    say(c->part);
    say(" read a null pointer in ");
    say(c->pass);
    say("; there the stage contract (model/model.hpp) gives ");
    say(c->given);
    say("\n");
    _exit(1);
  }
  struct sigaction& prev = previous();
  if (prev.sa_flags & SA_SIGINFO && prev.sa_sigaction) return prev.sa_sigaction(sig, info, context);
  signal(sig, prev.sa_handler == SIG_IGN ? SIG_DFL : prev.sa_handler);  // returns: it re-faults
}
inline void install_once() {
  static const bool installed = [] {
    struct sigaction action {};
    action.sa_sigaction = &report;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &previous());
    return true;
  }();
  (void)installed;
}
}  // namespace contract_detail

// What a part is given in each backward pass and in the forward (the contract of
// model/model.hpp), for its fault report. `model` outlives the PartCall.
inline PartCall backward_call(const std::string& model, const char* part, nn::BackwardPart p) {
  if (p == nn::BackwardPart::weight)
    return {model.c_str(), part, "the W pass (weight gradients, zero-bubble schedules)",
            "no parameters (Block: w == null; Head: every w[i] == null), dx == null; g given"};
  if (p == nn::BackwardPart::input)
    return {model.c_str(), part, "the B pass (input gradients, zero-bubble schedules)",
            "w, g and dx given (g: for gradients as cheap as the norms')"};
  return {model.c_str(), part, "the backward", "w, g and dx given (Embedding: no w)"};
}
inline PartCall forward_call(const std::string& model) {
  return {model.c_str(), "a part's forward (Embedding, Block or Head)", "the forward",
          "w given (x, out, losses, targets given)"};
}

// The part call `c` for the scope's lifetime (nested scopes restore the outer one).
class ContractScope {
 public:
  explicit ContractScope(const PartCall& c) : outer_(contract_detail::current()) {
    contract_detail::install_once();
    contract_detail::current() = &c;
  }
  ~ContractScope() { contract_detail::current() = outer_; }
  ContractScope(const ContractScope&) = delete;
  ContractScope& operator=(const ContractScope&) = delete;

 private:
  const PartCall* outer_;
};

}  // namespace trident
