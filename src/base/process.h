// Running a child process (nvcc, the host linker) with its output captured to a file.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace fact {

/// Runs argv[0] (looked up on PATH) with the given arguments, stdout and stderr both
/// written to `log_path`. Returns the exit status (128 + signal if killed).
/// Throws fact::Error if the process cannot be started.
int run_process(const std::vector<std::string>& argv, const std::filesystem::path& log_path);

/// Runs a command and returns its stdout+stderr as a string (for `nvcc --version`).
/// Returns an empty string when the command cannot be run or exits nonzero.
std::string capture_output(const std::vector<std::string>& argv);

/// Quotes argv for display in logs and reports ("nvcc -O3 ...").
std::string join_command(const std::vector<std::string>& argv);

}  // namespace fact
