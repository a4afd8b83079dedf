// A fixture for cmake/check_function_length.cmake: one function of 83 lines, its signature
// over two lines (clang-format off keeps them); the check must name it (function_length.catches).
#pragma once

namespace fixture {
// clang-format off
inline int too_long(int a,
                    int b) {
  int s = a + b;
  s += 0;
  s += 1;
  s += 2;
  s += 3;
  s += 4;
  s += 5;
  s += 6;
  s += 7;
  s += 8;
  s += 9;
  s += 10;
  s += 11;
  s += 12;
  s += 13;
  s += 14;
  s += 15;
  s += 16;
  s += 17;
  s += 18;
  s += 19;
  s += 20;
  s += 21;
  s += 22;
  s += 23;
  s += 24;
  s += 25;
  s += 26;
  s += 27;
  s += 28;
  s += 29;
  s += 30;
  s += 31;
  s += 32;
  s += 33;
  s += 34;
  s += 35;
  s += 36;
  s += 37;
  s += 38;
  s += 39;
  s += 40;
  s += 41;
  s += 42;
  s += 43;
  s += 44;
  s += 45;
  s += 46;
  s += 47;
  s += 48;
  s += 49;
  s += 50;
  s += 51;
  s += 52;
  s += 53;
  s += 54;
  s += 55;
  s += 56;
  s += 57;
  s += 58;
  s += 59;
  s += 60;
  s += 61;
  s += 62;
  s += 63;
  s += 64;
  s += 65;
  s += 66;
  s += 67;
  s += 68;
  s += 69;
  s += 70;
  s += 71;
  s += 72;
  s += 73;
  s += 74;
  s += 75;
  s += 76;
  s += 77;
  return s;
}

inline int short_enough(int a) {
  return a;
}

}  // namespace fixture
