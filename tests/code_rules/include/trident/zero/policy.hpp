// The policy itself compares its stage (the fixture of cmake/check_code_rules.cmake).
struct Policy {
  int stage = 0;
  bool shards() const { return stage >= 1; }
};
