package record_test

import "syscall"

// Only for Windows: compiled on Linux it would redeclare osName and call a
// function Linux's syscall lacks.
func osName() string { return "windows" }

var pid = syscall.GetCurrentProcessId()
