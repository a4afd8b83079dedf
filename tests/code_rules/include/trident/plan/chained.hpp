// The fixture of cmake/check_code_rules.cmake: lines 5 and 6 chain statements with the comma
// operator; 7-8 (a declaration's next declarators), 9 (a call's arguments) and 10 (a comment) do
// not.
inline void fill(Config& c, int& n) {
  c.tp = 2, c.pp = 4;
  n += c.tp, ++n;
  int a = 1,
      b = 2, d = 3;
  call(a = 1, b);
  c.dp = b;  // as c.dp = b, c.cp = d would
}
