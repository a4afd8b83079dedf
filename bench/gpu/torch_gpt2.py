#!/usr/bin/env python3
"""bench/gpu/torch_gpt2.py: the PyTorch peer of trident's GPU benchmark (bench/gpu/README.md).

GPT-2 (learned positions, pre-LayerNorm blocks, GELU-tanh MLP, LM head tied to the token
embedding) from torch.nn layers, trained with AdamW on random tokens of the same vocabulary as
trident's `--data synthetic`, bf16 autocast (fp32 master weights) or fp32, eager or
torch.compile. Prints one line with tokens_per_s= (median step after the warm-up steps) and
mfu= (model FLOPs per token as trident counts them, nn/flops.hpp after Narayanan et al. 2021
§5.1, times 3 for forward and backward, over --peak-tflops).

  python3 bench/gpu/torch_gpt2.py --mode eager     # GPT-2 124M, batch 8 x 1024, on cuda
  python3 bench/gpu/torch_gpt2.py --device cpu --layers 2 --hidden 64 --heads 4 --vocab 256 \
      --seq 32 --batch 4 --steps 3 --dtype fp32    # a smoke test on a CPU
"""
import argparse
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def causal_attention(q, k, v):  # q, k, v: (B, heads, T, D)
    if hasattr(F, "scaled_dot_product_attention"):  # FlashAttention's kernels on a GPU
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    T = q.size(-2)  # an older PyTorch (a CPU smoke test): the plain form
    att = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=q.device), 1)
    return att.masked_fill(mask, float("-inf")).softmax(-1) @ v


class Block(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.qkv, self.proj = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
        self.fc, self.out = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)

    def forward(self, x):  # x: (B, T, C)
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = causal_attention(q, k, v)  # (B, heads, T, D)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(a.vocab, a.hidden), nn.Embedding(a.seq, a.hidden)
        self.blocks = nn.ModuleList(Block(a.hidden, a.heads) for _ in range(a.layers))
        self.lnf = nn.LayerNorm(a.hidden)
        for m in self.modules():  # GPT-2's initialisation: N(0, 0.02) weights, zero biases
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)

    def forward(self, idx, targets):  # idx, targets: (B, T)
        x = self.wte(idx) + self.wpe(torch.arange(idx.size(1), device=idx.device))
        for block in self.blocks:
            x = block(x)
        logits = self.lnf(x) @ self.wte.weight.t()  # (B, T, V), tied head
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.reshape(-1))


def flops_per_token(a):
    """3 x the forward's GEMM FLOPs per token: per layer 24 h^2 + 4 s h, the head 2 h V."""
    h, s = a.hidden, a.seq
    return 3 * (a.layers * (24 * h * h + 4 * s * h) + 2 * h * a.vocab)


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mode", choices=["eager", "compile"], default="eager")
    p.add_argument("--device", default="cuda")
    p.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--vocab", type=int, default=50304)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=10, help="timed steps")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first (compilation)")
    p.add_argument("--peak-tflops", type=float, default=989.0,
                   help="dense bf16 peak of the GPU (H100 SXM and H200: 989)")
    return p.parse_args(argv)


def main():
    a = parse()
    torch.manual_seed(0)
    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    torch.backends.cuda.matmul.allow_tf32 = True  # PyTorch's fast fp32 path, as users run it
    model = GPT(a).to(dev)
    fused = {"fused": True} if cuda else {}  # (older PyTorch on a CPU: no `fused`)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, **fused)
    step_fn = torch.compile(model) if a.mode == "compile" else model
    gen = torch.Generator(device="cpu").manual_seed(1)
    autocast = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=a.dtype == "bf16")
    times = []
    for step in range(a.warmup + a.steps):
        idx = torch.randint(0, a.vocab, (a.batch, a.seq + 1), generator=gen).to(dev)
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        with autocast:
            loss = step_fn(idx[:, :-1], idx[:, 1:])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if cuda:
            torch.cuda.synchronize()
        if step >= a.warmup:
            times.append(time.perf_counter() - t0)
    params = sum(q.numel() for q in model.parameters())
    tokens_per_s = a.batch * a.seq / statistics.median(times)
    mfu = flops_per_token(a) * tokens_per_s / (a.peak_tflops * 1e12)
    name = torch.cuda.get_device_name(dev) if cuda else "cpu"
    print(f"torch {torch.__version__} {a.mode} {a.dtype} on {name}: {params} parameters "
          f"(L{a.layers} C{a.hidden} H{a.heads} V{a.vocab} T{a.seq}), batch {a.batch}, "
          f"loss {loss.item():.4f} tokens_per_s={tokens_per_s:.0f} mfu={mfu:.4f}")
    assert math.isfinite(loss.item())


if __name__ == "__main__":
    main()
