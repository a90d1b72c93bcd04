# ltrun_embed_sql(OUT DIR...): turns every *.sql under DIRs (a DIR may hold wildcards) into one C++ source with a
# table {relative name, text}; regenerated when a file changes.
function(ltrun_embed_sql out)
  set(files)
  foreach(dir ${ARGN})
    file(GLOB sql CONFIGURE_DEPENDS ${dir}/*.sql)
    list(APPEND files ${sql})
  endforeach()
  list(SORT files)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DROOT=${CMAKE_SOURCE_DIR} "-DFILES=${files}"
            -P ${CMAKE_SOURCE_DIR}/cmake/embed_run.cmake
    DEPENDS ${files} ${CMAKE_SOURCE_DIR}/cmake/embed_run.cmake
    COMMENT "Embedding db/*.sql"
    VERBATIM)
endfunction()
