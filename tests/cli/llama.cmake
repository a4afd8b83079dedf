# train_llama's bad input (models/llama/config.hpp): one message naming the numbers, printed
# once, a non-zero exit, no hang (trident_cli_error: tests/cli/cli.cmake).
if(NOT TRIDENT_BUILD_EXAMPLES)
  return()
endif()

set(tiny_llama --layers 2 --hidden 16 --heads 4 --kv-heads 2 --seq 8 --batch 4 --steps 1 --data synthetic)
trident_cli_error(llama_kv_heads_not_dividing_heads RANKS 2 PROGRAM train_llama ARGS ${tiny_llama}
  --kv-heads 3 --dp 2 EXPECT "the 3 KV heads do not divide the 4 attention heads (grouped-query attention)")
trident_cli_error(llama_kv_heads_not_divisible_by_tp RANKS 2 PROGRAM train_llama ARGS ${tiny_llama}
  --kv-heads 1 --tp 2
  EXPECT "the 1 KV heads are not divisible by TP=2 (each rank holds whole key/value heads)")
trident_cli_error(llama_seq_not_divisible_by_tp RANKS 2 PROGRAM train_llama ARGS ${tiny_llama}
  --seq 7 --tp 2 --sequence-parallel
  EXPECT "sequence parallelism needs the sequence length 7 to be divisible by TP=2")
trident_cli_error(llama_odd_head_size RANKS 1 PROGRAM train_llama ARGS ${tiny_llama} --hidden 36
  EXPECT "RoPE rotates pairs of features: the head size 9 (hidden 36 / 4 heads) must be even")

# The same per-step losses on a mesh as in one process (trident_same_losses: tests/cli/cli.cmake).
trident_same_losses(llama_tp2_sp RANKS 2 PROGRAM train_llama ARGS --tp 2 --sequence-parallel
  BOTH --kv-heads 2)
trident_same_losses(llama_pp2_dp2_zero3 RANKS 4 PROGRAM train_llama ARGS --pp 2 --dp 2 --zero 3
  BOTH --kv-heads 1)
trident_same_losses(llama_emulated_tp2_pp2_dp2_zero3 RANKS 8 PROGRAM train_llama ARGS --tp 2 --pp 2
  --dp 2 --zero 3 --device emulated BOTH --kv-heads 2)

# A mixture of experts (models/llama/moe_mlp.hpp): its bad input, the same losses on a mesh as in
# one process, and its progress line (the load-balancing loss and the expert load).
trident_cli_error(llama_moe_top_k_above_experts RANKS 2 PROGRAM train_llama ARGS ${tiny_llama}
  --experts 1 --moe-top-k 2 --dp 2
  EXPECT "top-k 2 is larger than the 1 experts: a token cannot pick more experts than there are")
trident_cli_error(llama_moe_with_cp RANKS 2 PROGRAM train_llama ARGS ${tiny_llama} --experts 4
  --cp 2 EXPECT "--cp 2 with --experts is not supported")
trident_same_losses(llama_moe_tp2_pp2_zero1 RANKS 4 PROGRAM train_llama ARGS --tp 2 --pp 2 --zero 1
  BOTH --kv-heads 2 --experts 4 --moe-top-k 2 --moe-every 2)
trident_cli_expect(llama_moe_progress RANKS 2 PROGRAM train_llama ARGS ${tiny_llama} --dp 2
  --experts 4 --moe-top-k 2 --steps 2
  EXPECT "F=64 E=4 top-2 every 1 F_e=64 V=256 T=8| aux ")

# --hf-config: a Hugging Face config.json gives the shape (models/llama/hf_config.hpp), and a
# shape flag beside it is refused.
set(hf_config ${CMAKE_CURRENT_SOURCE_DIR}/data/llama_hf_config.json)
trident_cli_expect(llama_hf_config RANKS 2 PROGRAM train_llama ARGS --tp 2 --hf-config ${hf_config}
  --seq 8 --batch 4 --steps 2 --data synthetic EXPECT "L=2 C=32 H=4 KV=2 F=48 V=67 T=8")
trident_cli_error(llama_hf_config_and_shape RANKS 2 PROGRAM train_llama ARGS --hf-config ${hf_config}
  --hidden 64 --steps 1 --data synthetic
  EXPECT "--hidden and --hf-config both give the model's shape: give one")
