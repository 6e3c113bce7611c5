//go:build !unix

package compiler

import "time"

func cpuTime() (time.Duration, bool) { return 0, false }
