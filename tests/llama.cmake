# The Llama family against what others wrote (tests/llama/, issue 30's peer checks):
#   llama_models        the fixture: random llama / qwen2 / qwen3 models (tied and untied, GQA
#                       4/2 and 4/1) as GGUF at F32, F16 and Q8_0 and as Hugging Face folders at
#                       F32, F16 and BF16, the float64 reference's logits, and llama.cpp's
#                       greedy tokens (node-llama-cpp), written once per ctest run;
#   llama_peers_agree   the reference's greedy tokens equal llama.cpp's (no kiln involved);
#   llama_decode[_B]    `kiln decode --prompt-ids ... --greedy --print-ids` on backend B prints
#                       llama.cpp's tokens for every file and prompt;
#   llama_logits[_B]    `kiln dev parity` on every folder (F32, F16, BF16) and GGUF file (F32,
#                       F16) gives the reference's logits to 1e-5;
#   llama_export        `kiln export --format hf` reads back in the reference with the model's
#                       tensors; `kiln export --format gguf` decodes in llama.cpp as the
#                       fixture's files do;
#   llama_train_export `kiln train --model llama` (llama tied, qwen2 untied, qwen3 options),
#                       then `kiln export --format gguf` at F32, F16 and Q8_0: llama.cpp decodes
#                       each file to `kiln decode --greedy`'s tokens;
#   llama_quant_mix     `kiln quantize --format q4_k_m|q5_k_m|q4_k_s|q5_k_s` and the pure types of
#                       F32 GGUF files (llama, rows of 256; qwen2, rows of 192 and 576; gpt2) give
#                       every tensor the type and bytes llama.cpp's llama_model_quantize gives it;
#   llama_lora          kiln's LoRA adapters in llama.cpp (check_lora.py, below);
#   llama_tokenizers    `kiln tokenizer encode` after `kiln tokenizer import --hf` gives
#                       @lenml/tokenizers' ids for three real tokenizer.json files;
#   llama_kquant_models the K-quant fixture: llama.cpp's own quantizer (llama_model_quantize)
#                       turns two random models' F32 GGUF into Q4_K_M and Q5_K_M (rows of 256
#                       and 768: K formats; rows of 192: its fallbacks Q5_0, Q5_1, Q8_0), and
#                       llama.cpp decodes them (make_kquant_models.py);
#   llama_kquant_decode[_B]  `kiln decode` of those files on backend B prints llama.cpp's
#                       tokens (one prompt of three per file may differ: a flipped near tie).
# The npm peers are found through the environment variable KILN_NODE_PEERS (.ci/run sets it);
# without them the tests that need them skip (77) in one line; any refusal of kiln's fails.
# Debian's python3 with python3-torch runs the scripts (KILN_TORCH_PYTHON, tests/host.cmake).
if(NOT KILN_TORCH_PYTHON)
  return()
endif()
set(_kiln_llama_dir ${CMAKE_CURRENT_SOURCE_DIR}/llama)
set(_kiln_llama_models ${CMAKE_CURRENT_BINARY_DIR}/llama_models)

add_test(NAME llama_models
  COMMAND ${KILN_TORCH_PYTHON} ${_kiln_llama_dir}/make_models.py --out ${_kiln_llama_models})
set_tests_properties(llama_models PROPERTIES LABELS cpu TIMEOUT 300 SKIP_RETURN_CODE 77
  FIXTURES_SETUP kiln_llama_models)

add_test(NAME llama_peers_agree
  COMMAND ${KILN_TORCH_PYTHON} ${_kiln_llama_dir}/check_reference.py --models ${_kiln_llama_models})
set_tests_properties(llama_peers_agree PROPERTIES LABELS cpu TIMEOUT 120 SKIP_RETURN_CODE 77
  FIXTURES_REQUIRED kiln_llama_models)

foreach(backend ${_kiln_host_backends})
  foreach(what decode logits)
    kiln_host_test_name(${what} ${backend} name)
    string(REPLACE "host_" "llama_" name ${name})
    kiln_host_test_env(${backend} "OMP_NUM_THREADS=1" env)
    add_test(NAME ${name}
      COMMAND ${KILN_TORCH_PYTHON} ${_kiln_llama_dir}/check_${what}.py --models ${_kiln_llama_models}
              --kiln $<TARGET_FILE:kiln_host> --backend ${backend})
    set_tests_properties(${name} PROPERTIES LABELS ${backend} TIMEOUT 300 SKIP_RETURN_CODE 77
      ENVIRONMENT "${env}" FIXTURES_REQUIRED kiln_llama_models)
  endforeach()
endforeach()

add_test(NAME llama_kquant_models
  COMMAND ${KILN_TORCH_PYTHON} ${_kiln_llama_dir}/make_kquant_models.py --out ${_kiln_llama_models}_kquant)
set_tests_properties(llama_kquant_models PROPERTIES LABELS cpu TIMEOUT 300 SKIP_RETURN_CODE 77
  FIXTURES_SETUP kiln_llama_kquant_models)

foreach(backend ${_kiln_host_backends})
  kiln_host_test_name(kquant_decode ${backend} name)
  string(REPLACE "host_" "llama_" name ${name})
  kiln_host_test_env(${backend} "OMP_NUM_THREADS=1" env)
  add_test(NAME ${name}
    COMMAND ${KILN_TORCH_PYTHON} ${_kiln_llama_dir}/check_decode.py --models ${_kiln_llama_models}_kquant
            --kiln $<TARGET_FILE:kiln_host> --backend ${backend})
  set_tests_properties(${name} PROPERTIES LABELS ${backend} TIMEOUT 300 SKIP_RETURN_CODE 77
    ENVIRONMENT "${env}" FIXTURES_REQUIRED kiln_llama_kquant_models)
endforeach()

add_test(NAME llama_export
  COMMAND ${KILN_TORCH_PYTHON} ${_kiln_llama_dir}/check_export.py --models ${_kiln_llama_models}
          --kiln $<TARGET_FILE:kiln_host> --work ${CMAKE_CURRENT_BINARY_DIR}/host_work/llama_peer_export)
set_tests_properties(llama_export PROPERTIES LABELS cpu TIMEOUT 300 SKIP_RETURN_CODE 77
  FIXTURES_REQUIRED kiln_llama_models)

add_test(NAME llama_train_export
  COMMAND ${KILN_TORCH_PYTHON} ${_kiln_llama_dir}/check_train_export.py --kiln $<TARGET_FILE:kiln_host>
          --work ${CMAKE_CURRENT_BINARY_DIR}/host_work/llama_train_export)
set_tests_properties(llama_train_export PROPERTIES LABELS cpu TIMEOUT 120 SKIP_RETURN_CODE 77)

add_test(NAME llama_quant_mix
  COMMAND ${KILN_TORCH_PYTHON} ${_kiln_llama_dir}/check_quant_mix.py --kiln $<TARGET_FILE:kiln_host>
          --work ${CMAKE_CURRENT_BINARY_DIR}/host_work/llama_quant_mix)
set_tests_properties(llama_quant_mix PROPERTIES LABELS cpu TIMEOUT 120 SKIP_RETURN_CODE 77)

add_test(NAME llama_tokenizers
  COMMAND ${KILN_TORCH_PYTHON} ${_kiln_llama_dir}/check_tokenizers.py --kiln $<TARGET_FILE:kiln_host>
          --work ${CMAKE_CURRENT_BINARY_DIR}/host_work/llama_tokenizers)
set_tests_properties(llama_tokenizers PROPERTIES LABELS cpu TIMEOUT 300 SKIP_RETURN_CODE 77)

# llama_lora: LoRA adapters (issue 32) that kiln trained on GPT-2, llama and qwen3 bases,
# exported as llama.cpp's LoRA GGUF, decode in llama.cpp to `kiln decode --lora`'s tokens at
# F32 and Q8_0, at a scale and two at once; merged exports decode alike; a Q8_0 merge keeps
# eval loss within 0.01 (tests/llama/check_lora.py).
add_test(NAME llama_lora
  COMMAND ${KILN_TORCH_PYTHON} ${_kiln_llama_dir}/check_lora.py --kiln $<TARGET_FILE:kiln_host>
          --work ${CMAKE_CURRENT_BINARY_DIR}/host_work/llama_lora)
set_tests_properties(llama_lora PROPERTIES LABELS cpu TIMEOUT 600 SKIP_RETURN_CODE 77)
