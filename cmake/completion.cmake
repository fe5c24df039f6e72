# Write a shell completion script by running the built gpuctl:
#   cmake -DBIN=path/to/gpuctl -DSHELL_NAME=bash|zsh -DOUT=FILE -P completion.cmake
# The script comes from gpuctl's own command and option tables
# (`gpuctl completion bash|zsh`, src/cli/completion.c).
# A sanitizer build's leak check at exit needs ptrace, which some build
# sandboxes lack; the tests check for leaks, the build need not.
set(ENV{ASAN_OPTIONS} "detect_leaks=0")
execute_process(COMMAND ${BIN} completion ${SHELL_NAME}
                OUTPUT_FILE ${OUT}.tmp
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(REMOVE ${OUT}.tmp)
  message(FATAL_ERROR "${BIN} completion ${SHELL_NAME} failed (${rc})")
endif()
file(RENAME ${OUT}.tmp ${OUT})
