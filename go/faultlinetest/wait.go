package faultlinetest

import (
	"context"
	"fmt"
	"time"
)

// PollInterval is how often WaitFor checks its condition.
var PollInterval = 20 * time.Millisecond

// WaitFor checks cond until it holds or budget runs out, and returns the time it took. A
// condition's error is retried (API calls fail while a fault is active); on a spent budget the
// error wraps ErrBudget and names the last one.
func WaitFor(ctx context.Context, budget time.Duration, cond func(context.Context) (bool, error)) (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	tick := time.NewTicker(PollInterval)
	defer tick.Stop()
	var last error
	for {
		ok, err := cond(ctx)
		if ok && err == nil {
			return time.Since(start), nil
		}
		last = err
		select {
		case <-ctx.Done():
			took := time.Since(start)
			if last != nil {
				return took, fmt.Errorf("not within %s (%w): last error: %v", budget, ErrBudget, last)
			}
			return took, fmt.Errorf("not within %s: %w", budget, ErrBudget)
		case <-tick.C:
		}
	}
}
