package fleet

import (
	"context"
	"time"
)

// Sleep waits d or until ctx (nil: never) is done, and then returns why
// ctx ended (context.Cause: ctx.Err() unless a cause was given). It is the
// one sleep helper: adapters and engines call it rather than keep their own.
func Sleep(ctx context.Context, d time.Duration) error {
	if ctx == nil {
		ctx = context.Background()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
