# Turn the files of DIR matching GLOB (default "*"), or the files FILES
# ("|"-separated paths, each named by its last component), into byte arrays
# in OUT (one C file), with a lookup table and a getter; entries are sorted
# by name:
#
#   const TYPE ARRAY[] = {{name, data, len}, ..., {NULL, NULL, 0}};
#   const TYPE *GETTER(const char *name);
#
# HEADER is the include that declares TYPE (a struct of const char *name,
# const char *data, size_t len), ARRAY and GETTER.  Each file's bytes end
# with a NUL that len does not count.  Generated; never edit OUT.
#
#   cmake -DDIR=templates -DOUT=templates.c -DHEADER=gpuctl/templates.h
#         -DTYPE=gpc_template -DARRAY=gpc_templates -DGETTER=gpc_template_get
#         -P embed.cmake
#
# Or one file as one NUL-terminated array, with no table (a provider's node
# script or fabric script, CMakeLists.txt's gpuctl_provider_embed):
#
#   const unsigned char SYMBOL[] = {..., 0x00};
#
#   cmake -DFILE=providers/aws/efa.sh -DOUT=gpc_fabric_script_aws_efa.c
#         -DSYMBOL=gpc_fabric_script_aws_efa -P embed.cmake
if(DEFINED SYMBOL)
  foreach(var FILE OUT)
    if(NOT DEFINED ${var})
      message(FATAL_ERROR "embed.cmake: -D${var}=... is required with -DSYMBOL")
    endif()
  endforeach()
  file(READ ${FILE} hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
  string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" hex "${hex}")
  get_filename_component(fname ${FILE} NAME)
  set(body "/* Generated from ${fname} by cmake/embed.cmake. Do not edit. */\n")
  string(APPEND body "extern const unsigned char ${SYMBOL}[];\nconst unsigned char ${SYMBOL}[] = {\n${hex}0x00};\n")
  file(WRITE ${OUT}.tmp "${body}")
  file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
  return()
endif()
foreach(var OUT HEADER TYPE ARRAY GETTER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "embed.cmake: -D${var}=... is required")
  endif()
endforeach()
if(DEFINED FILES)
  # name -> path, by name
  string(REPLACE "|" ";" paths "${FILES}")
  set(files)
  foreach(p IN LISTS paths)
    get_filename_component(n ${p} NAME)
    if(DEFINED path_${n})
      message(FATAL_ERROR "embed.cmake: two files named ${n}")
    endif()
    set(path_${n} ${p})
    list(APPEND files ${n})
  endforeach()
  set(what "the files named in CMakeLists.txt")
elseif(DEFINED DIR)
  if(NOT DEFINED GLOB)
    set(GLOB "*")
  endif()
  file(GLOB files RELATIVE ${DIR} ${DIR}/${GLOB})
  foreach(n IN LISTS files)
    set(path_${n} ${DIR}/${n})
  endforeach()
  get_filename_component(dirname ${DIR} NAME)
  set(what "${dirname}/")
else()
  message(FATAL_ERROR "embed.cmake: -DDIR=... or -DFILES=... is required")
endif()
list(SORT files)
set(body "/* Generated from ${what} by cmake/embed.cmake. Do not edit. */\n")
string(APPEND body "#include <stddef.h>\n#include <string.h>\n#include \"${HEADER}\"\n\n")
set(table "")
set(i 0)
foreach(f ${files})
  file(READ ${path_${f}} hex HEX)
  file(SIZE ${path_${f}} size)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
  string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" hex "${hex}")
  string(APPEND body "static const unsigned char file_${i}[] = {\n${hex}0x00};\n")
  string(APPEND table "    {\"${f}\", (const char *)file_${i}, ${size}},\n")
  math(EXPR i "${i} + 1")
endforeach()
string(APPEND body "\nconst ${TYPE} ${ARRAY}[] = {\n${table}    {NULL, NULL, 0}\n};\n\n")
string(APPEND body "const ${TYPE} *${GETTER}(const char *name)\n{\n    for (const ${TYPE} *t = ${ARRAY}; t->name; t++)\n        if (strcmp(t->name, name) == 0)\n            return t;\n    return NULL;\n}\n")
file(WRITE ${OUT}.tmp "${body}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
