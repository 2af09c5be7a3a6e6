# cmake -DTRAIN=exe -DPROFILE_DIR=dir/ -DSOURCES=list -DSTAMP=file -P train.cmake
# Runs the core's training program, which writes PROFILE_DIR/<source>.gcda for each of the
# core's SOURCES (-dumpdir, CMakeLists.txt). Old profiles go first: GCC adds a run's counts to
# those it finds.
file(GLOB old "${PROFILE_DIR}*.gcda")
file(REMOVE ${old} "${STAMP}")
execute_process(COMMAND "${TRAIN}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "train.cmake: ${TRAIN} failed (${rc})")
endif()
foreach(src IN LISTS SOURCES)
  get_filename_component(name "${src}" NAME)
  if(NOT EXISTS "${PROFILE_DIR}${name}.gcda")
    message(FATAL_ERROR "train.cmake: the training run wrote no ${PROFILE_DIR}${name}.gcda")
  endif()
endforeach()
file(TOUCH "${STAMP}")
