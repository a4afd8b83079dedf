# cmake/check_code_rules.cmake: the rules a header of include/trident keeps that a compiler does
# not check.
#
#   cmake -DROOT=<source dir> -P cmake/check_code_rules.cmake
#
# What a policy says is asked of the policy, never re-derived: a ZeRO stage is zero/policy.hpp's
# ZeroPolicy, which names what the stage shards, when it reduces and when it gathers
# (shards_gradients(), reduces_per_microbatch(), gathers_per_microbatch(), ...); a pipeline
# schedule's kind has its traits record (pp/schedule_traits.hpp). A header that compares the
# number or the kind itself (`stage >= 2`, `c.zero < 3`, `kind == ScheduleKind::zbv`) derives
# that fact a second time, and drifts from the policy when the policy changes. And a statement
# does one thing: no assignments chained with the comma operator (`a = 1, b = 2;`).
# Each rule below is (name, what it catches, a regex on a line of code, the headers allowed to:
# regexes on the path under include/trident); a statement rule skips a line that continues the
# one before (a declaration's next declarators: the line before ends with ',' or '(').
# Every line of a header of ROOT/include/trident (.hpp, .cuh, .cu) that matches a rule, outside
# the rule's headers and after its // comment is cut, is printed (file, line, the line, what it
# breaks) and the check fails. Another rule is one more rule(...) call.
cmake_policy(SET CMP0007 NEW)  # lists keep empty elements
if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<source dir> -P check_code_rules.cmake")
endif()
get_filename_component(ROOT "${ROOT}" ABSOLUTE)

set(rules "")
# rule(<name> <what> <regex> <allowed>...): a line matching <regex> re-derives <what>.
function(rule name what regex)
  set(rules ${rules} ${name} PARENT_SCOPE)
  set(${name}_what "${what}" PARENT_SCOPE)
  set(${name}_regex "${regex}" PARENT_SCOPE)
  set(${name}_allowed "${ARGN}" PARENT_SCOPE)
endfunction()

# A ZeRO stage compared with a number, either way round: `stage >= 2`, `o.zero.stage == 0`,
# `c.zero < 3`, `3 == zero`. Not a call (`mesh.stage() == 0`: a pipeline stage) nor a longer name
# (`virtual_stage`, `stages`). Allowed: the policy itself; the shared-memory collectives' and
# the ties' stages (pipeline steps and virtual stages); the parity kit's loop over every stage.
set(compare "(==|!=|>=|<=|<|>)")
rule(zero_stage "a ZeRO stage's number: ask zero/policy.hpp's ZeroPolicy"
     "(^|[^A-Za-z0-9_])(stage|zero) *${compare} *[0-3]([^0-9.]|$)|(^|[^A-Za-z0-9_.])[0-3] *${compare} *[A-Za-z0-9_.]*(stage|zero)([^A-Za-z0-9_(]|$)"
     "^zero/policy\\.hpp$" "^core/shm_collectives\\.hpp$" "^train/ties\\.hpp$"
     "^testing/parity_cases\\.hpp$")
# A pipeline schedule's kind compared or switched on (`o.schedule == pp::ScheduleKind::zbv`,
# `case ScheduleKind::gpipe:`): what a schedule is (its placement, the chunks and microbatches it
# takes, its bubble, ...) is its traits record's. Allowed: the traits and the schedules' writers.
rule(schedule_kind "a pipeline schedule's kind: ask pp/schedule_traits.hpp's traits()"
     "(==|!=) *(pp::)?ScheduleKind::|ScheduleKind::[a-z0-9_]+ *(==|!=)|case +(pp::)?ScheduleKind::"
     "^pp/schedule\\.hpp$" "^pp/schedule_traits\\.hpp$")
# Two assignments (or an assignment and an increment) chained with the comma operator at the
# start of a statement: `c.tp = o.tp, c.pp = o.pp;`, `x += a, ++n;`. The content stands ';', '['
# and ']' in as %s%, %l% and %r% (below); a comma inside a call before the chain's own is missed.
set(target "[A-Za-z_*][A-Za-z0-9_.*>()-]*(%l%[^%]*%r%)?")
rule(comma_statement "statements chained with the comma operator: one statement each"
     "(^|\n) *${target} *(=|[-+*/|]=) [^,%{\n]*, *((\\+\\+|--)${target}|${target} *(=|[-+*/|]=|\\+\\+|--))")
set(comma_statement_statements TRUE)

set(base "${ROOT}/include/trident")
file(GLOB_RECURSE headers RELATIVE "${base}" "${base}/*.hpp" "${base}/*.cuh" "${base}/*.cu")
if(NOT headers)
  message(FATAL_ERROR "no headers under ${base}: nothing to check")
endif()
set(found 0)
foreach(h IN LISTS headers)
  file(READ "${base}/${h}" content)
  # one list element per line: ';', '\\' and the brackets would split or join elements, so they
  # stand in as %s%, %b%, %l%, %r% (put back to print the line)
  string(REPLACE ";" "%s%" content "${content}")
  string(REPLACE "\\" "%b%" content "${content}")
  string(REPLACE "[" "%l%" content "${content}")
  string(REPLACE "]" "%r%" content "${content}")
  foreach(r IN LISTS rules)
    set(allowed FALSE)
    foreach(a IN LISTS ${r}_allowed)
      if(h MATCHES "${a}")
        set(allowed TRUE)
      endif()
    endforeach()
    if(allowed OR NOT content MATCHES "${${r}_regex}")
      continue()  # most headers: no line to read
    endif()
    string(REPLACE "\n" ";" lines "${content}")
    set(n 0)
    set(before "")
    foreach(line IN LISTS lines)
      math(EXPR n "${n} + 1")
      string(REGEX REPLACE "//.*" "" code "${line}")
      set(continues FALSE)
      if(${r}_statements AND before MATCHES "[,(] *$")
        set(continues TRUE)
      endif()
      if(NOT code MATCHES "^ *$")
        set(before "${code}")
      endif()
      if(code MATCHES "${${r}_regex}" AND NOT continues)
        string(STRIP "${line}" shown)
        string(REPLACE "%s%" ";" shown "${shown}")
        string(REPLACE "%l%" "[" shown "${shown}")
        string(REPLACE "%r%" "]" shown "${shown}")
        string(REPLACE "%b%" "\\" shown "${shown}")
        message(SEND_ERROR "include/trident/${h}:${n}: ${shown}\n  ${${r}_what}")
        math(EXPR found "${found} + 1")
      endif()
    endforeach()
  endforeach()
endforeach()
if(found GREATER 0)
  message(FATAL_ERROR "${found} line(s) break a rule of the code")
endif()
list(LENGTH headers count)
string(REPLACE ";" ", " shown "${rules}")
message(STATUS "the code keeps its rules in ${count} headers (${shown})")
