# Writes a C++ source holding every preset file as a string, so that the built-in presets
# travel inside libcuda.so.1. Run at build time; inputs: PRESET_DIR, OUTPUT.
file(GLOB_RECURSE files RELATIVE ${PRESET_DIR} ${PRESET_DIR}/*.json)
list(SORT files)
set(body "#include \"fabric/builtin_presets.h\"\n#include <cstring>\n\nnamespace mcsim::fabric {\nnamespace {\nstruct Entry { const char* kind; const char* name; const char* text; };\nconst Entry kEntries[] = {\n")
foreach(f ${files})
  file(READ ${PRESET_DIR}/${f} text)
  get_filename_component(kind ${f} DIRECTORY)
  get_filename_component(name ${f} NAME_WE)
  string(APPEND body "  {\"${kind}\", \"${name}\", R\"mcsim_json(${text})mcsim_json\"},\n")
endforeach()
string(APPEND body "};\n}  // namespace\n\nconst char* builtinPresetText(const std::string& kind, const std::string& name) {\n  for (const Entry& e : kEntries) {\n    if (kind == e.kind && name == e.name) return e.text;\n  }\n  return nullptr;\n}\n\nstd::vector<std::string> builtinNames(const std::string& kind) {\n  std::vector<std::string> out;\n  for (const Entry& e : kEntries) {\n    if (kind == e.kind) out.emplace_back(e.name);\n  }\n  return out;\n}\n\n}  // namespace mcsim::fabric\n")
file(WRITE ${OUTPUT}.tmp "${body}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUTPUT}.tmp ${OUTPUT})
