// The fixture of cmake/check_code_rules.cmake: lines 4 and 5 re-derive a ZeRO stage's facts;
// 6 (a pipeline stage, a call), 7 (a longer name) and 8 (a comment) do not.
inline int held(const Config& c, const Mesh& mesh, int virtual_stage) {
  if (c.zero < 3) return 0;
  if (1 == c.policy.stage) return 1;
  if (mesh.stage() == 0) return 2;
  if (virtual_stage >= 1) return 3;
  return 4;  // as zero >= 2 would say
}
