package audit

import (
	"context"
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"
)

// Deleter deletes finished rollouts: internal/edge/store's Store.
type Deleter interface {
	DeleteFinishedRollouts(ctx context.Context, before time.Time) (int, error)
}

// Prune deletes the finished rollouts not updated for keep (store.DeleteFinishedRollouts: never an unfinished
// one; each with all of it in one transaction) and logs how many. keep <= 0 keeps everything.
func Prune(ctx context.Context, d Deleter, keep time.Duration, now time.Time, log *slog.Logger) (int, error) {
	if keep <= 0 {
		return 0, nil
	}
	n, err := d.DeleteFinishedRollouts(ctx, now.Add(-keep))
	if err != nil {
		log.Warn("history retention failed", slog.Int("deleted", n), slog.Any("err", err))
		return n, err
	}
	log.Info("history retention: finished rollouts deleted", slog.Int("deleted", n), slog.String("older_than", keep.String()))
	return n, nil
}

// RetentionInterval is how often serve applies the retention.
const RetentionInterval = time.Hour

// RunRetention applies Prune at once and then every interval until ctx ends. keep <= 0 returns at once.
func RunRetention(ctx context.Context, d Deleter, keep, interval time.Duration, clock clockwork.Clock, log *slog.Logger) {
	if keep <= 0 {
		return
	}
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	for {
		_, _ = Prune(ctx, d, keep, clock.Now(), log)
		select {
		case <-ctx.Done():
			return
		case <-clock.After(interval):
		}
	}
}
