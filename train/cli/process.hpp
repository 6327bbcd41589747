#pragma once
// What tinygpt settles about its own process before a command runs -- the standard descriptors,
// the OpenMP environment -- and what it checks after: that standard output took every byte.
#include <string>

namespace tinygpt::cli {

// A descriptor 0, 1 or 2 closed by the caller (`>&-`) would be the next file the program opens,
// and output meant for the terminal would land in it (a checkpoint, a log). Each closed one is
// held by /dev/null, stdout's opened read-only so that a write there still fails as on the
// closed descriptor (EBADF) and is reported.
void hold_closed_standard_descriptors();

// Makes the environment one libgomp and set_num_threads can live with, then re-executes the
// program once so that libgomp, which reads it as it loads, sees it (see process.cpp). Prints at
// most one note, from the first process only.
void settle_openmp_environment(char** argv);

// One line on stderr (the newline is added). Unlike fmt::print it does not throw: a failure to
// write there (stderr a full disk) has nowhere to be reported and must not end the program
// while it reports something else.
void say(const std::string& line);

// Writes out what standard output holds now (sample shows each character as the model makes
// it); throws std::system_error with the reason when it cannot.
void flush_stdout();

// "" when everything sent to standard output reached it -- what is still buffered is written
// now, as a full disk often shows only then -- else the error to report, "cannot write to
// standard output: No space left on device". `error` is the errno of a write that failed
// earlier, when known (else 0).
std::string stdout_failure(int error);

}  // namespace tinygpt::cli
