# Checkpoints through the command line: a job cut off and resumed on another mesh, a rank killed
# while a checkpoint is written, and trident-ckpt's inspect, export and import.
if(NOT TRIDENT_BUILD_EXAMPLES)
  return()
endif()

set(dir ${CMAKE_CURRENT_BINARY_DIR}/checkpoint_cli)
set(run ${MPIEXEC_EXECUTABLE}|${MPIEXEC_NUMPROC_FLAG})
set(train $<TARGET_FILE:train_gpt>|--layers|4|--hidden|32|--heads|4|--seq|16|--batch|8|--data|synthetic|--steps|10)
set(compare $<TARGET_FILE:compare_losses>)
set(ckpt $<TARGET_FILE:trident-ckpt>)

# Cut after step 5 on TP2-PP2 ZeRO-1 (its auto split 2.5 + 1.5: layer 2 on both stages, tied,
# saved once), resumed on DP2 ZeRO-3 and on PP2 split 1.5 + 2.5: steps 6-10 as the
# uninterrupted single-process run's, to 1e-10 (double).
set(d ${dir}/reshard)
trident_steps(checkpoint.reshard
  "${CMAKE_COMMAND}|-E|rm|-rf|${d}"
  "${run}|1|${train}|--dtype|double|--json|${d}.whole.json"
  "${run}|4|${train}|--dtype|double|--tp|2|--pp|2|--zero|1|--checkpoint-dir|${d}|--save-every|5|--stop-after|5"
  "EXISTS|${d}/step-00000005/index.json"
  "${run}|2|${train}|--dtype|double|--dp|2|--zero|3|--checkpoint-dir|${d}|--resume|--json|${d}.resumed.json"
  "OUTPUT|resumed from ${d}/step-00000005 at step 5"
  "${compare}|${d}.whole.json|${d}.resumed.json|1e-10"
  "${run}|2|${train}|--dtype|double|--pp|2|--pp-layers|1.5,2.5|--checkpoint-dir|${d}|--resume|--json|${d}.resplit.json"
  "OUTPUT|resumed from ${d}/step-00000005 at step 5"
  "${compare}|${d}.whole.json|${d}.resplit.json|1e-10")

# Rank 1 killed while writing the checkpoint of step 4: the job fails, step 2's checkpoint is
# complete, and resuming from it reproduces the uninterrupted losses bit for bit (same mesh).
set(d ${dir}/kill_during_save)
trident_steps(checkpoint.kill_during_save
  "${CMAKE_COMMAND}|-E|rm|-rf|${d}"
  "${run}|2|${train}|--dp|2|--zero|1|--json|${d}.whole.json"
  "FAIL|${CMAKE_COMMAND}|-E|env|TRIDENT_FAULT=kill-during-save:rank=1:step=4|${run}|2|${train}|--dp|2|--zero|1|--checkpoint-dir|${d}|--save-every|2"
  "EXISTS|${d}/step-00000002/index.json"
  "ABSENT|${d}/step-00000004"
  "${run}|2|${train}|--dp|2|--zero|1|--checkpoint-dir|${d}|--save-every|2|--resume|--json|${d}.resumed.json"
  "OUTPUT|resumed from ${d}/step-00000002 at step 2"
  "${compare}|${d}.whole.json|${d}.resumed.json|0")

# trident-ckpt: inspect verifies every shard; export equals --save of the same state, byte for
# byte; import gives a checkpoint that trains exactly as --init of the exported file.
set(d ${dir}/tool)
trident_steps(checkpoint.tool
  "${CMAKE_COMMAND}|-E|rm|-rf|${d}"
  "${run}|4|${train}|--dtype|double|--tp|2|--pp|2|--zero|1|--checkpoint-dir|${d}|--save-every|5|--stop-after|5|--save|${d}.saved.safetensors"
  "${ckpt}|inspect|${d}"
  "OUTPUT|saved on: {\"compute\":\"F64\",\"dp\":1,\"layer_split\":[2.5,1.5],\"pp\":2"
  "OUTPUT|156 tensors, 178752 elements, 4 shards"
  "OUTPUT|every checksum verified, every tensor covered exactly once"
  "${ckpt}|export|${d}|${d}.exported.safetensors"
  "${CMAKE_COMMAND}|-E|compare_files|${d}.exported.safetensors|${d}.saved.safetensors"
  "${ckpt}|import|${d}.exported.safetensors|${d}.imported|--heads|4"
  "OUTPUT|as ${d}.imported/step-00000000: step 0, AdamW moments zero"
  "${run}|2|${train}|--dtype|double|--tp|2|--init|${d}.exported.safetensors|--json|${d}.init.json"
  "${run}|2|${train}|--dtype|double|--tp|2|--resume|${d}.imported|--json|${d}.import.json"
  "${compare}|${d}.init.json|${d}.import.json|0")

# Checkpoint flags that cannot work: one clear error.
set(tiny --layers 2 --hidden 16 --heads 2 --seq 8 --batch 4 --steps 2 --data synthetic)
trident_cli_error(save_every_without_dir RANKS 2 PROGRAM train_gpt ARGS ${tiny} --save-every 1
  EXPECT "--save-every needs --checkpoint-dir")
trident_cli_error(resume_without_dir RANKS 2 PROGRAM train_gpt ARGS ${tiny} --resume
  EXPECT "--resume without a path needs --checkpoint-dir")
trident_cli_error(resume_missing RANKS 2 PROGRAM train_gpt ARGS ${tiny} --dp 2 --resume /nonexistent/ck
  EXPECT "/nonexistent/ck: no such checkpoint or checkpoint directory")
trident_cli_error(bad_fault RANKS 2 PROGRAM train_gpt ARGS ${tiny} --dp 2 --checkpoint-dir ${dir}/bad_fault --save-every 1
  EXPECT "TRIDENT_FAULT='kill-during-save:rank=one': 'one' is not a number >= 0")
set_property(TEST cli.bad_fault APPEND PROPERTY ENVIRONMENT "TRIDENT_FAULT=kill-during-save:rank=one")

# train_llama is the same program (io/train_program.hpp) over another model: cut after step 3 on
# TP2 x PP2 ZeRO-1, resumed on DP2 ZeRO-3: steps 4-6 as the uninterrupted single-process run's,
# to 1e-10 (double); the held-out loss, a sample, --save and --init of its weights, a timeline.
set(d ${dir}/llama)
set(llama $<TARGET_FILE:train_llama>|--layers|4|--hidden|32|--heads|4|--kv-heads|2|--seq|16|--batch|8|--data|synthetic|--steps|6)
trident_steps(checkpoint.llama_reshard
  "${CMAKE_COMMAND}|-E|rm|-rf|${d}"
  "${run}|1|${llama}|--dtype|double|--json|${d}.whole.json"
  "${run}|4|${llama}|--dtype|double|--tp|2|--pp|2|--zero|1|--checkpoint-dir|${d}|--save-every|3|--stop-after|3"
  "EXISTS|${d}/step-00000003/index.json"
  "${run}|2|${llama}|--dtype|double|--dp|2|--zero|3|--checkpoint-dir|${d}|--resume|--json|${d}.resumed.json"
  "OUTPUT|resumed from ${d}/step-00000003 at step 3"
  "${compare}|${d}.whole.json|${d}.resumed.json|1e-10")
# A mixture of experts (--experts) likewise: cut on TP2 x PP2 ZeRO-1, resumed on DP2 ZeRO-3, the
# same losses as one process's; its weights saved (the experts in trident's own layout) and read.
set(moe ${llama}|--experts|4|--moe-top-k|2|--moe-every|2)
trident_steps(checkpoint.llama_moe_reshard
  "${CMAKE_COMMAND}|-E|rm|-rf|${d}.moe"
  "${run}|1|${moe}|--dtype|double|--json|${d}.moe.whole.json"
  "${run}|4|${moe}|--dtype|double|--tp|2|--pp|2|--zero|1|--checkpoint-dir|${d}.moe|--save-every|3|--stop-after|3"
  "${run}|2|${moe}|--dtype|double|--dp|2|--zero|3|--checkpoint-dir|${d}.moe|--resume|--json|${d}.moe.resumed.json"
  "OUTPUT|resumed from ${d}.moe/step-00000003 at step 3"
  "${compare}|${d}.moe.whole.json|${d}.moe.resumed.json|1e-10"
  "${run}|2|${moe}|--tp|2|--steps|1|--save|${d}.moe.safetensors"
  "${run}|1|${moe}|--init|${d}.moe.safetensors|--steps|1"
  "OUTPUT|trident train_llama: ")
trident_steps(checkpoint.llama_tools
  "${CMAKE_COMMAND}|-E|rm|-rf|${d}.tools"
  "${run}|2|${llama}|--tp|2|--eval-every|3|--sample|20|--save|${d}.tools.safetensors|--svg|${d}.tools.svg"
  "OUTPUT|val loss"
  "OUTPUT|sample (20 tokens after the prompt"
  "EXISTS|${d}.tools.safetensors"
  "EXISTS|${d}.tools.svg"
  "${run}|1|${llama}|--init|${d}.tools.safetensors|--steps|1"
  "OUTPUT|trident train_llama: ")
