# Tests of the kiln program (host/): bad input, bit-exact resume, the KV cache, mixed
# precision (forced loss-scale overflow, exact fp16 resume, fp16 eval/decode), and whole-
# model parity with PyTorch. The shell scripts and the Python script drive the `kiln` binary.
#
# libgomp spins while it waits at a barrier; when ctest runs tests side by side on a small
# machine the spinning threads starve each other (small models slow down tenfold), so
# these tests ask it to sleep instead. Results do not depend on it.
set(_kiln_host_env "OMP_WAIT_POLICY=passive")

set(_kiln_host_work ${CMAKE_CURRENT_BINARY_DIR}/host_work)

# test_host_gpt_units.c is registered by the glob in tests/CMakeLists.txt; it tests host
# code, so it links the host's model library.
target_link_libraries(test_host_gpt_units PRIVATE kiln_model)
target_link_libraries(test_host_block PRIVATE kiln_model)
target_link_libraries(test_host_lora PRIVATE kiln_model)
target_link_libraries(test_host_seq2seq PRIVATE kiln_model)
target_link_libraries(test_host_seq2seq_beam PRIVATE kiln_model)
target_link_libraries(test_host_bert PRIVATE kiln_model)
target_link_libraries(test_host_gpt_quantize PRIVATE kiln_model)
target_link_libraries(test_host_load_memory PRIVATE kiln_model)
target_link_libraries(test_host_gpt_import PRIVATE kiln_model)
target_link_libraries(test_host_checkpoint_atomic PRIVATE kiln_model)
target_link_libraries(test_host_lora_gguf PRIVATE kiln_model)
target_link_libraries(test_host_bleu PRIVATE kiln_text)
# the parsers' tests replay the fuzz seeds (fuzz/corpus/<target>/) through the parser
target_compile_definitions(test_host_pairs PRIVATE KILN_FUZZ_CORPUS="${PROJECT_SOURCE_DIR}/fuzz/corpus")
target_compile_definitions(test_host_mo PRIVATE KILN_FUZZ_CORPUS="${PROJECT_SOURCE_DIR}/fuzz/corpus")
target_compile_definitions(test_host_gguf PRIVATE KILN_FUZZ_CORPUS="${PROJECT_SOURCE_DIR}/fuzz/corpus")
target_compile_definitions(test_host_hf_config PRIVATE KILN_FUZZ_CORPUS="${PROJECT_SOURCE_DIR}/fuzz/corpus")

# The backends this build can run the host tests on (tests/CMakeLists.txt).
set(_kiln_host_backends ${KILN_TEST_BACKENDS})

# The test's name: host_<what> on cpu, host_<what>_<backend> elsewhere.
function(kiln_host_test_name what backend out)
  if(backend STREQUAL "cpu")
    set(${out} host_${what} PARENT_SCOPE)
  else()
    set(${out} host_${what}_${backend} PARENT_SCOPE)
  endif()
endfunction()

# The environment of a test on `backend`.
function(kiln_host_test_env backend extra out)
  set(env "${_kiln_host_env}" ${extra})
  if(backend STREQUAL "vulkan")
    list(APPEND env "VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation" "KILN_VK_VALIDATION=fail")
  endif()
  set(${out} "${env}" PARENT_SCOPE)
endfunction()

# Bad input, progress lines and the refusal of an --out that holds a run are about the program, not the
# device: cpu only. host_attention.sh (--attention) checks its bad input and the memory rule on cpu, and
# 200 steps fused against unfused on every backend. Resume, the KV cache, mixed
# precision, LoRA fine-tuning and using adapters (host_lora.sh, host_lora_use.sh: their bad input on
# cpu only) run on every backend. These scripts train tiny models (dim 8 to 32) whose ops are too small to
# share between threads: one thread keeps them fast under a sanitizer and on a busy machine.
foreach(backend ${_kiln_host_backends})
  foreach(script bad_input progress out_refused resume decode_cache precision stability faults verify llama lora
                 lora_use attention)
    if((script STREQUAL "bad_input" OR script STREQUAL "progress" OR script STREQUAL "out_refused")
       AND NOT backend STREQUAL "cpu")
      continue()
    endif()
    kiln_host_test_name(${script} ${backend} name)
    kiln_host_test_env(${backend} "OMP_NUM_THREADS=1" env)
    add_test(NAME ${name}
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/host_${script}.sh $<TARGET_FILE:kiln_host>
              ${_kiln_host_work}/${script}_${backend} ${backend})
    set_tests_properties(${name} PROPERTIES LABELS ${backend} TIMEOUT 300 SKIP_RETURN_CODE 77
      ENVIRONMENT "${env}")
  endforeach()
endforeach()

# Long context (issue 33): --block 8192 trains in under 4 GiB on the cpu, and --block 2048 in no
# less than a quarter of that (host_long_context.sh; about 90 s on 2 cores, both OpenMP threads).
add_test(NAME host_long_context
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/host_long_context.sh $<TARGET_FILE:kiln_host>
          ${_kiln_host_work}/long_context)
set_tests_properties(host_long_context PROPERTIES LABELS cpu TIMEOUT 600 ENVIRONMENT "${_kiln_host_env}")

# PyTorch parity: Debian's python3 with python3-torch (not a pyenv python on PATH). The
# script exits 77 (skipped) when torch is missing or the backend cannot open here.
find_program(KILN_TORCH_PYTHON python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(KILN_TORCH_PYTHON)
  # gpt_parity: GPT-2 itself; block_parity: each stability option (docs/stability.md);
  # seq2seq_parity: the encoder-decoder Transformer; bert_parity: BERT's masked LM in
  # Hugging Face's layout; llama_parity: the Llama family's options (HF's semantics, float64);
  # lora_parity: LoRA adapters on GPT-2 and Llama bases against PEFT's semantics (float64
  # replay of 30 AdamW steps, and the logits of an adapter kiln train wrote, read from its files)
  foreach(backend ${_kiln_host_backends})
    foreach(script gpt_parity block_parity seq2seq_parity bert_parity llama_parity lora_parity)
      kiln_host_test_name(${script} ${backend} name)
      kiln_host_test_env(${backend} "" env)
      add_test(NAME ${name}
        COMMAND ${KILN_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/${script}.py
                --kiln $<TARGET_FILE:kiln_host> --workdir ${_kiln_host_work}/${script}_${backend}
                --backend ${backend})
      set_tests_properties(${name} PROPERTIES LABELS ${backend} SKIP_RETURN_CODE 77 TIMEOUT 300
        ENVIRONMENT "${env}")
    endforeach()
    # llama_io: the Llama family's HF folders and GGUF files read to the reference's logits
    kiln_host_test_name(llama_io ${backend} name)
    kiln_host_test_env(${backend} "" env)
    add_test(NAME ${name}
      COMMAND ${KILN_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/llama/io_checks.py
              --kiln $<TARGET_FILE:kiln_host> --workdir ${_kiln_host_work}/llama_io_${backend} --backend ${backend})
    set_tests_properties(${name} PROPERTIES LABELS ${backend} SKIP_RETURN_CODE 77 TIMEOUT 300 ENVIRONMENT "${env}")
  endforeach()
  # peft_schema: kiln train's LoRA adapters in PEFT's layout (config keys, names, shapes, dtype;
  # the host writes them: cpu)
  add_test(NAME host_peft_schema
    COMMAND ${KILN_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/peft_schema.py
            --kiln $<TARGET_FILE:kiln_host> --workdir ${_kiln_host_work}/peft_schema)
  set_tests_properties(host_peft_schema PROPERTIES LABELS cpu SKIP_RETURN_CODE 77 TIMEOUT 300
    ENVIRONMENT "${_kiln_host_env}")
  # llama_export: kiln export's GGUF and HF folders against the formats (the host writes them: cpu)
  add_test(NAME host_llama_export
    COMMAND ${KILN_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/llama/io_export_checks.py
            --kiln $<TARGET_FILE:kiln_host> --workdir ${_kiln_host_work}/llama_export)
  set_tests_properties(host_llama_export PROPERTIES LABELS cpu SKIP_RETURN_CODE 77 TIMEOUT 300
    ENVIRONMENT "${_kiln_host_env}")
else()
  message(STATUS "kiln: /usr/bin/python3 not found; the PyTorch parity test of the GPT is skipped")
endif()

# The encoder-decoder end to end: it learns to reverse and copy strings on the cpu and on
# OpenCL (the issue asks for one GPU backend; lavapipe takes minutes where PoCL takes one),
# decodes, resumes exactly, and (on cpu) refuses bad input.
foreach(backend ${_kiln_host_backends})
  if(backend STREQUAL "vulkan")
    continue()
  endif()
  kiln_host_test_name(seq2seq ${backend} name)
  kiln_host_test_env(${backend} "" env)
  add_test(NAME ${name}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/host_seq2seq.sh $<TARGET_FILE:kiln_host>
            ${_kiln_host_work}/seq2seq_${backend} ${backend})
  set_tests_properties(${name} PROPERTIES LABELS ${backend} TIMEOUT 900 SKIP_RETURN_CODE 77 ENVIRONMENT "${env}")
endforeach()

# BERT's masked LM end to end: it learns a structured text far above the unigram baseline,
# evaluates, resumes exactly, and (on cpu) refuses bad input; cpu and OpenCL, as seq2seq.
# Learning is shown on cpu (test_host_bert and bert_parity check every backend's numbers
# against it); OpenCL runs the script's code paths in quick mode, which saves 110 s of CI.
foreach(backend ${_kiln_host_backends})
  if(backend STREQUAL "vulkan")
    continue()
  endif()
  kiln_host_test_name(bert ${backend} name)
  set(quick "")
  if(NOT backend STREQUAL "cpu")
    set(quick "KILN_TEST_QUICK=1")
  endif()
  kiln_host_test_env(${backend} "${quick}" env)
  add_test(NAME ${name}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/host_bert.sh $<TARGET_FILE:kiln_host> ${_kiln_host_work}/bert_${backend}
            ${backend})
  set_tests_properties(${name} PROPERTIES LABELS ${backend} TIMEOUT 600 SKIP_RETURN_CODE 77 ENVIRONMENT "${env}")
endforeach()

# host/'s rooms include and link only the rooms above them in host/README.md's table (the
# cli <-> bench circle of issue 37 stays open): a wrong-way #include or link fails here.
add_test(NAME host_rooms COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/check_rooms.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(host_rooms PROPERTIES LABELS cpu TIMEOUT 60)

# `kiln --version` prints the version and commit; `kiln --help` lists every command of
# main.c's dispatch tables
add_test(NAME host_help COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/host_help.sh $<TARGET_FILE:kiln_host>
         ${PROJECT_SOURCE_DIR}/host/main.c ${PROJECT_VERSION})
set_tests_properties(host_help PROPERTIES LABELS cpu TIMEOUT 60)

# Every `kiln ...` option written in README.md, docs/ and samples/ is in that command's --help,
# and every command written there is one kiln --help lists; the self-test plants mistakes of
# each kind and checks that they are found. Any python3 (the standard library only).
find_program(KILN_PYTHON3 python3)
if(KILN_PYTHON3)
  add_test(NAME host_doc_options COMMAND ${KILN_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/doc_options.py
           $<TARGET_FILE:kiln_host> ${PROJECT_SOURCE_DIR})
  add_test(NAME host_doc_options_self_test COMMAND ${KILN_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/doc_options.py
           $<TARGET_FILE:kiln_host> --self-test)
  set_tests_properties(host_doc_options host_doc_options_self_test PROPERTIES LABELS cpu TIMEOUT 60)
else()
  message(STATUS "kiln: python3 not found; the check of the docs' options against --help is skipped")
endif()

# The GPU kit (scripts/gpu/, docs/gpu.md) runs on a GPU machine and as root, never here: this
# checks that its scripts parse, that its reports are valid JSON holding what was recorded
# within the device tool's output limits, and that a pack made here still fits.
add_test(NAME gpu_kit COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/gpu_kit.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(gpu_kit PROPERTIES LABELS cpu TIMEOUT 60)

# kiln plot renders a real picture (rsvg-convert) and refuses bad metrics files: not a device
# matter, cpu only.
add_test(NAME host_plot COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/host_plot.sh $<TARGET_FILE:kiln_host>
         ${_kiln_host_work}/plot)
set_tests_properties(host_plot PROPERTIES LABELS cpu TIMEOUT 300 SKIP_RETURN_CODE 77)

# kiln pairs from-mo: bad catalogs refused in one line; two real German catalogs of this
# machine (skipped where there are none) give pairs checked against Python's reading of them.
add_test(NAME host_pairs COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/host_pairs.sh $<TARGET_FILE:kiln_host>
         ${_kiln_host_work}/pairs)
set_tests_properties(host_pairs PROPERTIES LABELS cpu TIMEOUT 300 SKIP_RETURN_CODE 77)
# Tokenizers (host/text/): the Check suite reads GPT-2's files from tests/data/gpt2 and
# replays the fuzz seeds; the scripts drive `kiln tokenizer` (one-line errors, round trips)
# and compare it with the Python references (GPT-2's encoder.py algorithm, a naive BPE
# trainer), skipped (77) when /usr/bin/python3 lacks the regex module.
target_link_libraries(test_host_tokenizer PRIVATE kiln_text)
target_compile_definitions(test_host_tokenizer PRIVATE
  KILN_TEST_DATA_DIR="${CMAKE_CURRENT_SOURCE_DIR}/data"
  KILN_FUZZ_CORPUS_DIR="${PROJECT_SOURCE_DIR}/fuzz/corpus/tokenizer")
target_include_directories(test_host_tokenizer PRIVATE ${PROJECT_SOURCE_DIR}/fuzz)
# tokenizer.json's components (test_host_tokenizer_hf.c) and the real files of Llama 3, Qwen3
# and Llama 2 against @lenml/tokenizers' ids (host_tokenizer_hf.sh; skipped (77) without
# KILN_NODE_PEERS).
target_link_libraries(test_host_tokenizer_hf PRIVATE kiln_text)
target_compile_definitions(test_host_tokenizer_hf PRIVATE
  KILN_TEST_DATA_DIR="${CMAKE_CURRENT_SOURCE_DIR}/data"
  KILN_FUZZ_CORPUS_DIR="${PROJECT_SOURCE_DIR}/fuzz/corpus/tokenizer_json")
target_include_directories(test_host_tokenizer_hf PRIVATE ${PROJECT_SOURCE_DIR}/fuzz)
add_test(NAME host_tokenizer_hf COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/host_tokenizer_hf.sh $<TARGET_FILE:kiln_host>
         ${_kiln_host_work}/tokenizer_hf)
set_tests_properties(host_tokenizer_hf PROPERTIES LABELS cpu TIMEOUT 300 SKIP_RETURN_CODE 77)
# kiln decode --prompt-ids / --print-ids and the stop at an end-of-generation token
add_test(NAME host_decode_ids COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/host_decode_ids.sh $<TARGET_FILE:kiln_host>
         ${_kiln_host_work}/decode_ids)
set_tests_properties(host_decode_ids PROPERTIES LABELS cpu TIMEOUT 300 SKIP_RETURN_CODE 77
                     ENVIRONMENT "${_kiln_host_env}")
add_test(NAME host_tokenizer COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/host_tokenizer.sh $<TARGET_FILE:kiln_host>
         ${_kiln_host_work}/tokenizer)
set_tests_properties(host_tokenizer PROPERTIES LABELS cpu TIMEOUT 300 SKIP_RETURN_CODE 77)
add_test(NAME host_tokenizer_reference
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/host_tokenizer_reference.sh $<TARGET_FILE:kiln_host>
         ${_kiln_host_work}/tokenizer_reference)
set_tests_properties(host_tokenizer_reference PROPERTIES LABELS cpu TIMEOUT 300 SKIP_RETURN_CODE 77)
# A GPT of GPT-2's vocabulary decodes and evaluates through GPT-2's imported tokenizer as
# PyTorch does with OpenAI's encoder.py (skipped without torch or python3-regex).
if(KILN_TORCH_PYTHON)
  add_test(NAME host_gpt2_tokenizer_e2e
    COMMAND ${KILN_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/gpt2_tokenizer_e2e.py --kiln $<TARGET_FILE:kiln_host>
            --workdir ${_kiln_host_work}/gpt2_tokenizer_e2e)
  set_tests_properties(host_gpt2_tokenizer_e2e PROPERTIES LABELS cpu TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()

# Data-parallel training (mpirun -np 2 kiln train): step for step against one process with
# --grad-accum 2, resumes across the number of ranks, fp16, BERT and seq2seq, a Vulkan rank
# beside an OpenCL rank, a failing and a killed rank. One script for every backend it needs
# (the Vulkan rank under the validation layer); skipped (77) without mpirun or without MPI in
# the build.
kiln_host_test_env(vulkan "" env)
add_test(NAME host_mpi COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/host_mpi.sh $<TARGET_FILE:kiln_host>
         ${_kiln_host_work}/mpi)
set_tests_properties(host_mpi PROPERTIES LABELS cpu TIMEOUT 600 SKIP_RETURN_CODE 77 ENVIRONMENT "${env}")

# Every quantized type and mix of kiln quantize end to end (evaluated and benchmarked on each
# backend), and the GGUF files refused by tensor and file (host_quant_types.sh).
foreach(backend ${_kiln_host_backends})
  kiln_host_test_name(quant_types ${backend} name)
  kiln_host_test_env(${backend} "OMP_NUM_THREADS=1" env)
  add_test(NAME ${name} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/host_quant_types.sh $<TARGET_FILE:kiln_host>
           ${_kiln_host_work}/quant_types_${backend} ${backend})
  set_tests_properties(${name} PROPERTIES LABELS ${backend} TIMEOUT 300 SKIP_RETURN_CODE 77 ENVIRONMENT "${env}")
endforeach()

# GGUF and quantized inference (kiln export, kiln quantize, eval and decode of .gguf files)
# on every backend: the quantized product runs on the device (kiln_matmul_q).
foreach(backend ${_kiln_host_backends})
  kiln_host_test_name(gguf ${backend} name)
  kiln_host_test_env(${backend} "OMP_NUM_THREADS=1" env)
  add_test(NAME ${name} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/host_gguf.sh $<TARGET_FILE:kiln_host>
           ${_kiln_host_work}/gguf_${backend} ${backend})
  set_tests_properties(${name} PROPERTIES LABELS ${backend} TIMEOUT 300 SKIP_RETURN_CODE 77 ENVIRONMENT "${env}")
endforeach()

# seq2seq and BERT runs log the GPT's monitoring (attention entropy against its closed form
# under uniform attention, per-layer gradient norms), and kiln plot labels their runs: cpu.
add_test(NAME host_monitor COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/host_monitor.sh $<TARGET_FILE:kiln_host>
         ${_kiln_host_work}/monitor)
set_tests_properties(host_monitor PROPERTIES LABELS cpu TIMEOUT 300)

# samples/stability/reproduce.py's judgements (too short against stalled, reproduced or not)
# on made-up runs: plain Python, cpu.
find_program(KILN_PYTHON3 python3)
if(KILN_PYTHON3)
  add_test(NAME stability_report_logic COMMAND ${KILN_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/stability_report_logic.py)
  set_tests_properties(stability_report_logic PROPERTIES LABELS cpu TIMEOUT 60)
endif()
