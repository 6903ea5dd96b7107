package github

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	gh "github.com/google/go-github/v60/github"

	"github.com/fleetwave/fleetwave/internal/edge/github/fakegithub"
)

// recordedBudget is a WriteBudget that records what it is asked.
type recordedBudget struct {
	mu     sync.Mutex
	takes  map[int64]int
	pauses []string
}

func (b *recordedBudget) Take(_ context.Context, id int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.takes[id]++
	return nil
}

func (b *recordedBudget) Pause(id int64, d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pauses = append(b.pauses, fmt.Sprintf("%d:%s", id, d))
}

func (b *recordedBudget) got() (map[int64]int, []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := map[int64]int{}
	for k, v := range b.takes {
		t[k] = v
	}
	return t, append([]string(nil), b.pauses...)
}

func budgetEnv(t *testing.T) (*env, *recordedBudget) {
	t.Helper()
	fake := fakegithub.New(t, fakegithub.WithApp(testAppID, &testKey().PublicKey))
	fake.AddPullRequest(testRepo, fakegithub.PullRequest{Number: 7, HeadSHA: headSHA, BaseSHA: strings.Repeat("b", 40)})
	sl := &sleeps{}
	budget := &recordedBudget{takes: map[int64]int{}}
	app, err := NewApp(AppConfig{
		AppID: testAppID, PrivateKey: testKeyPEM(), APIURL: fake.URL(), Transport: fake.Client().Transport,
		Retry: RetryPolicy{Sleep: sl.sleep}, WriteBudget: budget,
		ClientOptions: []ClientOption{WithBotLogin(fake.BotLogin())},
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := app.Client(testInst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Token(context.Background(), testInst); err != nil {
		t.Fatal(err)
	}
	return &env{fake: fake, app: app, client: c, sleeps: sl}, budget
}

func TestWriteBudget(t *testing.T) {
	ctx := context.Background()
	t.Run("every content-creating request takes a token, reads and token requests none", func(t *testing.T) {
		e, budget := budgetEnv(t)
		if _, err := e.client.PullRequest(ctx, testRepo, 7); err != nil {
			t.Fatal(err)
		}
		id, err := e.client.CreateCheckRun(ctx, testRepo, CheckRun{Name: "fleetwave/diff", HeadSHA: headSHA, Status: StatusInProgress})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.client.UpdateCheckRun(ctx, testRepo, id, CheckRun{Name: "fleetwave/diff", Conclusion: ConclusionSuccess}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.client.UpsertComment(ctx, testRepo, 7, []string{"hello"}); err != nil {
			t.Fatal(err)
		}
		writes := 0
		for _, r := range e.fake.Requests() {
			if contentCreating(r.Method) && !strings.Contains(r.Path, "access_tokens") {
				writes++
			}
		}
		takes, pauses := budget.got()
		if writes != 3 || takes[testInst] != writes || len(takes) != 1 || len(pauses) != 0 {
			t.Fatalf("takes %v, pauses %v for %d content-creating requests; want %d takes of installation %d, no pause", takes, pauses, writes, 3, testInst)
		}
	})
	t.Run("a rate limit waited out pauses the installation meanwhile", func(t *testing.T) {
		e, budget := budgetEnv(t)
		e.fake.InjectSecondaryRateLimit(1, 7*time.Second)
		if _, err := e.client.CreateCheckRun(ctx, testRepo, CheckRun{Name: "fleetwave/diff", HeadSHA: headSHA, Status: StatusInProgress}); err != nil {
			t.Fatal(err)
		}
		if _, pauses := budget.got(); fmt.Sprint(pauses) != fmt.Sprintf("[%d:7s]", testInst) {
			t.Fatalf("pauses %v; want installation %d paused 7s", pauses, testInst)
		}
		if got := fmt.Sprint(e.sleeps.got()); got != "[7s]" {
			t.Fatalf("retry waits %s; want [7s]", got)
		}
	})
	t.Run("a rate limit beyond MaxWait is returned and pauses the installation for all of it", func(t *testing.T) {
		e, budget := budgetEnv(t)
		e.fake.InjectSecondaryRateLimit(1, 10*time.Minute)
		_, err := e.client.CreateCheckRun(ctx, testRepo, CheckRun{Name: "fleetwave/diff", HeadSHA: headSHA, Status: StatusInProgress})
		var abuse *gh.AbuseRateLimitError
		if !errors.As(err, &abuse) {
			t.Fatalf("error %v (%T); want a *github.AbuseRateLimitError", err, err)
		}
		if _, pauses := budget.got(); fmt.Sprint(pauses) != fmt.Sprintf("[%d:10m0s]", testInst) {
			t.Fatalf("pauses %v; want installation %d paused 10m", pauses, testInst)
		}
	})
}
