# The run report as a web page (--html, io/html_report.hpp), opened in a real browser: runs
# COMMAND (|-separated; it writes PAGE, and JSON when given), loads PAGE in headless Chromium
# (Debian's chromium package), fails on any console message (an error, an exception) and on a page
# whose plotted numbers differ from its data's (CHECK: check_html DOM [JSON]). SKIPPED, with the
# reason, where Chromium is not installed or cannot start. No COMMAND: PAGE was written by
# another test (a fixture).
if(COMMAND)
  string(REPLACE "|" ";" COMMAND "${COMMAND}")
  file(REMOVE ${PAGE} ${JSON})
  execute_process(COMMAND ${COMMAND} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${COMMAND}\nfailed with status ${status}:\n${out}${err}")
  endif()
elseif(NOT EXISTS "${PAGE}")  # its run failed (reported there) or was skipped
  message(STATUS "SKIPPED: ${PAGE} was not written (the run that writes it did not run)")
  return()
endif()
find_program(chromium NAMES chromium chromium-browser google-chrome)
if(NOT chromium)
  message(STATUS "SKIPPED: no Chromium to open the page (apt-get install chromium)")
  return()
endif()
# root needs --no-sandbox; a profile of its own keeps $HOME untouched
execute_process(COMMAND ${chromium} --headless --no-sandbox --disable-gpu --no-first-run
                        --user-data-dir=${PAGE}.profile --enable-logging=stderr --v=0
                        --virtual-time-budget=5000 --dump-dom file://${PAGE}
                RESULT_VARIABLE status OUTPUT_VARIABLE dom ERROR_VARIABLE log TIMEOUT 120)
file(REMOVE_RECURSE ${PAGE}.profile)
if(NOT status EQUAL 0 OR NOT dom MATCHES "<body")
  string(LENGTH "${log}" n)
  if(n GREATER 2000)
    math(EXPR from "${n} - 2000")
    string(SUBSTRING "${log}" ${from} 2000 log)
  endif()
  message(STATUS "SKIPPED: Chromium could not start (status ${status}):\n${log}")
  return()
endif()
string(REGEX MATCHALL "[^\n]*CONSOLE[^\n]*" console "${log}")
if(console)
  message(FATAL_ERROR "the page wrote to the console:\n${console}")
endif()
file(WRITE ${PAGE}.dom.html "${dom}")
execute_process(COMMAND ${CHECK} ${PAGE}.dom.html ${JSON} RESULT_VARIABLE status
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "the page does not plot the report's numbers:\n${out}${err}")
endif()
message(STATUS "${out}")
