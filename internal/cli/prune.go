package cli

import (
	"context"
	"log/slog"
	"time"
)

// What serve's store keeps only for a while. GitHub redelivers a delivery (same id) for up to 3 days: its id is
// kept two weeks to recognise it. A pull request's preview claim and check-run ids are kept 30 days: a delivery for
// a head older than that is previewed again, as a re-run would.
const (
	deliveryRetention = 14 * 24 * time.Hour
	previewRetention  = 30 * 24 * time.Hour
	pruneEvery        = time.Hour
)

// pruneStore is the part of the store the pruner uses (*store.Store implements it).
type pruneStore interface {
	PruneDeliveries(ctx context.Context, olderThan time.Duration) (int64, error)
	PrunePreviews(ctx context.Context, olderThan time.Duration) (int64, error)
}

// pruneLoop deletes, at start and then every interval until ctx ends, the delivery ids and previews past their
// retention, so that the store of a long-running bot stays the size of its recent work. A failure is logged and
// tried again at the next tick.
func pruneLoop(ctx context.Context, st pruneStore, log *slog.Logger, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		pruneOnce(ctx, st, log)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func pruneOnce(ctx context.Context, st pruneStore, log *slog.Logger) {
	for _, p := range []struct {
		what  string
		keep  time.Duration
		prune func(context.Context, time.Duration) (int64, error)
	}{
		{"deliveries", deliveryRetention, st.PruneDeliveries},
		{"previews", previewRetention, st.PrunePreviews},
	} {
		n, err := p.prune(ctx, p.keep)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("pruning the store", slog.String("what", p.what), slog.Any("error", err))
		case n > 0:
			log.Info("pruned the store", slog.String("what", p.what), slog.Int64("deleted", n), slog.Duration("older_than", p.keep))
		}
	}
}
