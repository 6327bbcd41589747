# The installed package, tested as a user meets it. Run by ctest with cmake -P:
#   -DBUILD_DIR=<this build>  -DSOURCE_DIR=<the tree>  -DWORK_DIR=<scratch>
#   -DCXX=<compiler>  -DSANITIZE=ON|OFF
# 1. cmake --install BUILD_DIR into WORK_DIR/prefix (the libraries are already built);
#    with the bash completion script, the one `tinygpt completion bash` prints;
# 2. no build-only flag of tinygpt (-march, -f... codegen, -W..., sanitizers) in the exported
#    targets, so none can reach a consumer;
# 3. examples/consumer configured with -DCMAKE_PREFIX_PATH=WORK_DIR/prefix, linking every target
#    the package exports (each one listed by name below, so the export set cannot shrink
#    unnoticed), built, and run: it gradient-checks a custom module ("gradcheck GatedMLP: ok")
#    and trains it with AdamW ("AdamW on GatedMLP: ok"); the own-model example
#    (examples/own_model/train_own_model.cpp) is built there too, trains a run and draws its page;
# 4. the consumer's own compile lines hold none of those flags either.
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR CXX)
  if(NOT ${var})
    message(FATAL_ERROR "consumer.cmake: -D${var}=... is required")
  endif()
endforeach()

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}")
  endif()
  set(output "${out}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK_DIR}/prefix)
set(consumer_build ${WORK_DIR}/build)
file(REMOVE_RECURSE ${prefix})

run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
set(package_dir ${prefix}/lib/cmake/tinygpt)
foreach(file tinygptConfig.cmake tinygptConfigVersion.cmake tinygptTargets.cmake)
  if(NOT EXISTS ${package_dir}/${file})
    message(FATAL_ERROR "the install did not write ${package_dir}/${file}")
  endif()
endforeach()
foreach(file bin/tinygpt include/tinygpt/version.hpp include/tinygpt/autograd/ops.hpp
             include/tinygpt/nn/module.hpp share/bash-completion/completions/tinygpt)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "the install did not write ${prefix}/${file}")
  endif()
endforeach()

# The completion script is the installed program's own (tinygpt completion bash), and bash reads it.
run("tinygpt completion bash" ${prefix}/bin/tinygpt completion bash)
file(READ ${prefix}/share/bash-completion/completions/tinygpt installed_completion)
if(NOT installed_completion STREQUAL output OR NOT output MATCHES "complete -F _tinygpt tinygpt")
  message(FATAL_ERROR "the installed bash completion is not what tinygpt completion bash prints")
endif()
run("bash -n on the completion script" bash -n ${prefix}/share/bash-completion/completions/tinygpt)

# Every flag tinygpt_flags sets; none may appear in what a consumer imports.
set(build_only_flags -march -mno-avx512f -fsanitize -fno-sanitize-recover -fno-omit-frame-pointer
    -fno-math-errno -fno-trapping-math -Wall -Wextra -Wpedantic tinygpt_flags)
file(GLOB exported ${package_dir}/*.cmake)
foreach(file ${exported})
  file(READ ${file} text)
  foreach(flag ${build_only_flags})
    string(FIND "${text}" "${flag}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "${file} passes the build-only flag '${flag}' to consumers")
    endif()
  endforeach()
endforeach()

# A sanitizer build installs libraries compiled with ASan/UBSan: a consumer of those must link
# the runtimes itself (they are not passed on), which is what it does here.
set(consumer_flags "")
if(SANITIZE)
  set(consumer_flags "-fsanitize=address,undefined")
endif()
file(REMOVE_RECURSE ${consumer_build})
run("configuring examples/consumer" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/consumer
    -B ${consumer_build} -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
    "-DCMAKE_CXX_FLAGS=${consumer_flags}" "-DCMAKE_EXE_LINKER_FLAGS=${consumer_flags}")
set(configure_output "${output}")
foreach(target autograd nn data io plot heads seq2seq report distributed train analysis)
  if(NOT configure_output MATCHES "tinygpt::${target}[;\n]")
    message(FATAL_ERROR "the installed package does not export tinygpt::${target}:\n${configure_output}")
  endif()
endforeach()
run("building examples/consumer" ${CMAKE_COMMAND} --build ${consumer_build})

file(READ ${consumer_build}/compile_commands.json commands)
foreach(flag ${build_only_flags})
  if(SANITIZE AND flag MATCHES "sanitize")
    continue()  # added above by the consumer itself
  endif()
  string(FIND "${commands}" "${flag}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "the consumer's compile line holds tinygpt's build-only flag '${flag}':\n"
                        "${commands}")
  endif()
endforeach()

run("running examples/consumer" ${consumer_build}/gated_mlp)
message("${output}")
if(NOT output MATCHES "gradcheck GatedMLP: ok" OR NOT output MATCHES "AdamW on GatedMLP: ok")
  message(FATAL_ERROR "examples/consumer did not report a passing gradcheck and training")
endif()
run("running examples/consumer's encoder-decoder" ${consumer_build}/tiny_seq2seq)
message("${output}")
if(NOT output MATCHES "gradcheck TinySeq2Seq: ok" OR NOT output MATCHES "Trainer on TinySeq2Seq: ok")
  message(FATAL_ERROR "examples/consumer's tiny_seq2seq did not report a passing gradcheck and training")
endif()
set(own_run ${WORK_DIR}/own-run)
file(REMOVE_RECURSE ${own_run})
run("running examples/consumer's train_own_model" ${consumer_build}/train_own_model --out ${own_run} --steps 4)
message("${output}")
if(NOT output MATCHES "step 4" OR NOT EXISTS ${own_run}/model.safetensors
   OR NOT EXISTS ${own_run}/report.html)
  message(FATAL_ERROR "examples/consumer's train_own_model did not train its run to step 4 and draw its page")
endif()
