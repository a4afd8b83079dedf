# compare_losses (COMPARE) must fail when a loss is not a finite number (null in JSON, as
# train_gpt writes NaN) and pass on the same finite losses: DIR is a scratch directory.
file(WRITE ${DIR}/finite.json "{\"losses\": [5.5, 5.25]}")
file(WRITE ${DIR}/nan.json "{\"losses\": [5.5, null]}")
execute_process(COMMAND ${COMPARE} ${DIR}/finite.json ${DIR}/finite.json 1e-10 RESULT_VARIABLE same)
execute_process(COMMAND ${COMPARE} ${DIR}/nan.json ${DIR}/nan.json 1e-10 RESULT_VARIABLE nan
                OUTPUT_VARIABLE out)
execute_process(COMMAND ${COMPARE} ${DIR}/finite.json ${DIR}/nan.json 1e-10 RESULT_VARIABLE mixed)
if(NOT same EQUAL 0 OR nan EQUAL 0 OR mixed EQUAL 0 OR NOT out MATCHES "not a finite number")
  message(FATAL_ERROR "compare_losses: finite/finite ${same} (want 0), nan/nan ${nan}, "
                      "finite/nan ${mixed} (want non-zero):\n${out}")
endif()
