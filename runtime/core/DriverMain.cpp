//===- DriverMain.cpp - main() of every bin/dev<k> executable -------------===//
//
// The generated object file defines `weft_program`; this main hands it to the
// runtime's command-line driver.
//
//===----------------------------------------------------------------------===//

#include "weft_rt.h"

extern "C" const weft_rt_program weft_program;

int main(int argc, char **argv) {
  return weft_rt_driver_main(&weft_program, argc, argv);
}
