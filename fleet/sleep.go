package fleet

import (
	"context"
	"time"
)

// Sleep waits d or until ctx (nil: never) is done, and then returns ctx's
// error.
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
		return ctx.Err()
	}
}
