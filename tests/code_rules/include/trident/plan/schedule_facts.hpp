// The fixture of cmake/check_code_rules.cmake: lines 4 and 5 re-derive a schedule's facts from
// its kind; 6 (an assignment) and 7 (a comment) do not.
inline int chunks(Options& o) {
  if (o.schedule == pp::ScheduleKind::zbv) return 2;
  switch (o.schedule) { case ScheduleKind::gpipe: return 1; default: break; }
  o.schedule = pp::ScheduleKind::one_f_one_b;
  return 1;  // as o.schedule == ScheduleKind::interleaved would say
}
