package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Render is the configuration of the render pool (internal/render/isolate), of serve and of the other commands.
// The zero value is every default.
type Render struct {
	// InProcess renders in this process, without worker processes (FLEETWAVE_RENDER_WORKERS=0).
	InProcess bool
	// Workers is the number of worker processes (0: the command's own number, else GOMAXPROCS).
	Workers int
	// MemoryBytes is one worker's memory cap (0: isolate's default, 1 GiB).
	MemoryBytes int64
	// Timeout is one app's render time cap, used when the command sets none (0: the renderer's default).
	Timeout time.Duration

	// Serve only (zero for the other commands).

	// Share is the number of workers one installation holds at once (0: all but one, at least one).
	Share int
	// ChangeOutput bounds the manifests of one change's renders (0: isolate's default).
	ChangeOutput int64
	// Budget bounds the time of one change's renders (0: the App's default, 10m; negative: no budget).
	Budget time.Duration
}

// LoadRender reads the render settings of scope (ForServe or ForCLI) from the environment alone, every problem
// listed at once. LoadServe and LoadCLI read them too; this is for a render pool built on its own.
func LoadRender(getenv func(string) string, scope int) (Render, error) {
	var problems []string
	r := readRender(envSource(getenv), scope, func(p string) { problems = append(problems, p) })
	if len(problems) > 0 {
		return Render{}, &Error{Problems: problems, Of: "environment"}
	}
	return r, nil
}

// source returns one setting, trimmed, and whether it is set.
type source func(key string) (setting, bool)

// envSource reads the environment; a variable set to the empty string (or blanks) counts as unset.
func envSource(getenv func(string) string) source {
	return func(k string) (setting, bool) {
		v := ""
		if getenv != nil {
			v = strings.TrimSpace(getenv(k))
		}
		return setting{value: v, origin: k}, v != ""
	}
}

// readRender reads the render settings; bad receives each problem, one line naming its origin.
func readRender(get source, scope int, bad func(string)) Render {
	var r Render
	if s, ok := get(EnvRenderTimeout); ok {
		if d, err := time.ParseDuration(s.value); err != nil || d <= 0 {
			bad(fmt.Sprintf("%s=%q: want a duration such as 60s", s.origin, s.value))
		} else {
			r.Timeout = d
		}
	}
	if s, ok := get(EnvRenderWorkers); ok {
		if n, err := strconv.Atoi(s.value); err != nil || n < 0 {
			bad(fmt.Sprintf("%s=%q: want a number of processes (0: render in-process)", s.origin, s.value))
		} else {
			r.Workers, r.InProcess = n, n == 0
		}
	}
	if s, ok := get(EnvRenderMemory); ok {
		if n, err := ParseBytes(s.value); err != nil {
			bad(fmt.Sprintf("%s: %v", s.origin, err))
		} else {
			r.MemoryBytes = n
		}
	}
	if scope&ForServe == 0 {
		return r
	}
	if s, ok := get(EnvRenderShare); ok {
		if n, err := strconv.Atoi(s.value); err != nil || n < 1 {
			bad(fmt.Sprintf("%s=%q: want the number of render workers one installation may hold at once (at least 1)", s.origin, s.value))
		} else {
			r.Share = n
		}
	}
	if s, ok := get(EnvRenderChangeOutput); ok {
		if n, err := ParseBytes(s.value); err != nil {
			bad(fmt.Sprintf("%s: %v", s.origin, err))
		} else {
			r.ChangeOutput = n
		}
	}
	if s, ok := get(EnvRenderBudget); ok {
		if d, err := time.ParseDuration(s.value); err != nil || d == 0 {
			bad(fmt.Sprintf("%s=%q: want a duration such as 10m (negative: no budget)", s.origin, s.value))
		} else {
			r.Budget = d
		}
	}
	return r
}

// ParseBytes reads a size: a number of bytes, or with a unit K, M, G (KiB, MiB, GiB; powers of 1024): "1GiB",
// "512MiB", "1.5G".
func ParseBytes(s string) (int64, error) {
	num := strings.TrimSpace(s)
	mult := int64(1)
	upper := strings.ToUpper(num)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(upper, u.suffix) {
			num, mult = strings.TrimSpace(num[:len(num)-len(u.suffix)]), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f <= 0 || f*float64(mult) > 1<<50 {
		return 0, fmt.Errorf("%q is not a size (bytes, or a number with K, M or G)", s)
	}
	return int64(f * float64(mult)), nil
}
