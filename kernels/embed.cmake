# cmake -DINPUT=file -DOUTPUT=file.c [-DTEXT=ON] -P embed.cmake
# Writes the bytes of INPUT as the C definitions of mcsim_kernel_image / mcsim_kernel_image_size
# (include/mcsim/kernels.h). TEXT=ON appends a NUL, since drivers read PTX text as a C string.
# Plain CMake, so that the build needs no xxd or Python.
file(READ "${INPUT}" hex HEX)
if(TEXT)
  string(APPEND hex "00")
endif()
string(LENGTH "${hex}" digits)
math(EXPR bytes "${digits} / 2")
# "0x.." per byte, sixteen bytes per line (CMake's regex has no {n}: the pattern is spelled out).
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
string(REPEAT "0x..," 16 line)
string(REGEX REPLACE "(${line})" "\\1\n" hex "${hex}")
get_filename_component(name "${INPUT}" NAME)
file(WRITE "${OUTPUT}.tmp" "/* Generated from ${name} by kernels/embed.cmake; do not edit. */
#include \"mcsim/kernels.h\"

/* 16-byte aligned, as the image would be in a .nv_fatbin section. */
_Alignas(16) const unsigned char mcsim_kernel_image[${bytes}] = {
${hex}
};
const size_t mcsim_kernel_image_size = ${bytes};
")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
