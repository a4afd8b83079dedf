// The traits compare the kind (the fixture of cmake/check_code_rules.cmake).
inline bool splits(ScheduleKind kind) { return kind == ScheduleKind::zb_h1; }
