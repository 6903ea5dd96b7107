package rollout_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// minimalRollout drives waves of apps to rev through a server's API the cheapest way any client could, as the
// benchmark's yardstick of what the simulator and this machine allow: one stream, every sync of a wave sent at
// once, nothing recorded, no policy, and an app taken as done from the stream alone (its operation Succeeded at
// rev, a reconcile stamped no earlier than its end, Healthy) — without the refresh fleetwave asks for to rule
// out a status computed before the operation ended, so it is a lower bound, not a safe client. It returns the
// time from before it opens the stream to the last app done.
func minimalRollout(ctx context.Context, base string, waves [][]string, rev string) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024}}
	defer hc.CloseIdleConnections()
	began := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/stream/applications", nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("stream: %s", resp.Status)
	}

	var (
		mu      sync.Mutex
		waiting = map[string]bool{} // the current wave's apps not done yet
		allDone = make(chan struct{}, 1)
	)
	streamErr := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			var m struct {
				Result struct {
					Application minimalApp `json:"application"`
				} `json:"result"`
			}
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				streamErr <- err
				return
			}
			a := m.Result.Application
			mu.Lock()
			if waiting[a.Metadata.Name] && a.done(rev) {
				delete(waiting, a.Metadata.Name)
				if len(waiting) == 0 {
					select {
					case allDone <- struct{}{}:
					default:
					}
				}
			}
			mu.Unlock()
		}
		streamErr <- fmt.Errorf("stream ended: %v", sc.Err())
	}()

	for _, apps := range waves {
		mu.Lock()
		for _, a := range apps {
			waiting[a] = true
		}
		mu.Unlock()
		errs := make(chan error, len(apps))
		for _, a := range apps {
			go func() { errs <- minimalSync(ctx, hc, base, a, rev) }()
		}
		for range apps {
			if err := <-errs; err != nil {
				return 0, err
			}
		}
		select {
		case <-allDone:
		case err := <-streamErr:
			return 0, err
		case <-time.After(time.Minute):
			return 0, fmt.Errorf("wave %v did not finish", apps[:1])
		}
	}
	return time.Since(began), nil
}

func minimalSync(ctx context.Context, hc *http.Client, base, app, rev string) error {
	body := fmt.Sprintf(`{"name":%q,"revision":%q}`, app, rev)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/applications/"+app+"/sync", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("syncing %s: %s", app, resp.Status)
	}
	return nil
}

// minimalApp is the part of an Application minimalRollout reads.
type minimalApp struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Status struct {
		Health struct {
			Status string `json:"status"`
		} `json:"health"`
		ReconciledAt   *time.Time `json:"reconciledAt"`
		OperationState *struct {
			Phase      string     `json:"phase"`
			FinishedAt *time.Time `json:"finishedAt"`
			SyncResult *struct {
				Revision string `json:"revision"`
			} `json:"syncResult"`
		} `json:"operationState"`
	} `json:"status"`
}

func (a minimalApp) done(rev string) bool {
	os := a.Status.OperationState
	return os != nil && os.Phase == "Succeeded" && os.SyncResult != nil && os.SyncResult.Revision == rev &&
		os.FinishedAt != nil && a.Status.ReconciledAt != nil && !a.Status.ReconciledAt.Before(*os.FinishedAt) &&
		a.Status.Health.Status == "Healthy"
}
