# Concatenate CSV files that share one header line into OUT: the header
# once, then every file's records in the order given.  Used for the
# built-in instance table: providers/NAME/catalog.csv, by folder name
# (CMakeLists.txt), so that the table is the one catalog/README.md
# describes, sorted by provider.  A file whose header differs from the
# first one's, or whose last line has no newline, fails the build.
# Generated; never edit OUT.
#
#   cmake -DOUT=gpu_instances.csv -DFILES="a/catalog.csv|b/catalog.csv"
#         -P concat-csv.cmake
foreach(var OUT FILES)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "concat-csv.cmake: -D${var}=... is required")
  endif()
endforeach()
string(REPLACE "|" ";" files "${FILES}")
set(first "")
set(header "")
set(body "")
foreach(f IN LISTS files)
  file(READ "${f}" text)
  string(FIND "${text}" "\n" nl)
  if(nl EQUAL -1)
    message(FATAL_ERROR "${f}: no header line")
  endif()
  string(SUBSTRING "${text}" 0 ${nl} head)
  math(EXPR from "${nl} + 1")
  string(SUBSTRING "${text}" ${from} -1 records)
  if(first STREQUAL "")
    set(first "${f}")
    set(header "${head}")
    string(APPEND body "${head}\n")
  elseif(NOT head STREQUAL header)
    message(FATAL_ERROR "${f}: its header differs from that of ${first}; every file "
                        "must have the same columns in the same order")
  endif()
  if(NOT records STREQUAL "" AND NOT records MATCHES "\n$")
    message(FATAL_ERROR "${f}: the last line has no newline")
  endif()
  string(APPEND body "${records}")
endforeach()
if(first STREQUAL "")
  message(FATAL_ERROR "concat-csv.cmake: no files")
endif()
file(WRITE ${OUT}.tmp "${body}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
