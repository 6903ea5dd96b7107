package plan

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"
)

// TestLoad: the first policy file the reader has wins; none is the default policy; a file that cannot be read or
// parsed is an error naming it, and the next name is not tried (a broken .fleetwave.yaml is never skipped for a
// .fleetwave.yml).
func TestLoad(t *testing.T) {
	const valid = "apiVersion: fleetwave/v1\nwaves:\n  - name: %s\n    selector: {}\n"
	unreadable := errors.New(".fleetwave.yaml: not a regular file")
	tests := []struct {
		name      string
		files     map[string]string // content; "!" is an unreadable file
		wantFile  string
		wantWave  string // the policy's first wave; "" for the default policy
		wantErr   string
		policyErr bool // the error is ParsePolicy's *PolicyError
		wantReads []string
	}{
		{name: "none", files: map[string]string{}, wantReads: []string{".fleetwave.yaml", ".fleetwave.yml"}},
		{name: ".fleetwave.yaml", files: map[string]string{".fleetwave.yaml": fmt.Sprintf(valid, "yaml")},
			wantFile: ".fleetwave.yaml", wantWave: "yaml", wantReads: []string{".fleetwave.yaml"}},
		{name: ".fleetwave.yml alone", files: map[string]string{".fleetwave.yml": fmt.Sprintf(valid, "yml")},
			wantFile: ".fleetwave.yml", wantWave: "yml", wantReads: []string{".fleetwave.yaml", ".fleetwave.yml"}},
		{name: "both: .fleetwave.yaml first", files: map[string]string{".fleetwave.yaml": fmt.Sprintf(valid, "yaml"), ".fleetwave.yml": fmt.Sprintf(valid, "yml")},
			wantFile: ".fleetwave.yaml", wantWave: "yaml", wantReads: []string{".fleetwave.yaml"}},
		{name: "unreadable (a symbolic link)", files: map[string]string{".fleetwave.yaml": "!", ".fleetwave.yml": fmt.Sprintf(valid, "yml")},
			wantFile: ".fleetwave.yaml", wantErr: unreadable.Error(), wantReads: []string{".fleetwave.yaml"}},
		{name: "invalid", files: map[string]string{".fleetwave.yaml": "apiVersion: fleetwave/v9\n", ".fleetwave.yml": fmt.Sprintf(valid, "yml")},
			wantFile: ".fleetwave.yaml", wantErr: ".fleetwave.yaml:1:", policyErr: true, wantReads: []string{".fleetwave.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var reads []string
			read := func(name string) ([]byte, error) {
				reads = append(reads, name)
				data, ok := tt.files[name]
				switch {
				case !ok:
					return nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
				case data == "!":
					return nil, unreadable
				}
				return []byte(data), nil
			}
			p, file, err := Load(read)
			if file != tt.wantFile || !slices.Equal(reads, tt.wantReads) {
				t.Errorf("file %q after reading %q, want %q after %q", file, reads, tt.wantFile, tt.wantReads)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || p != nil {
					t.Fatalf("Load = %v, %v; want no policy and an error containing %q", p, err, tt.wantErr)
				}
				var pe *PolicyError
				if errors.As(err, &pe) != tt.policyErr {
					t.Errorf("error %T; a *PolicyError: %v, want %v", err, !tt.policyErr, tt.policyErr)
				}
				if !tt.policyErr && !errors.Is(err, unreadable) {
					t.Errorf("error %v, want the reader's as it is", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.wantWave == "" && !p.IsDefault():
				t.Errorf("policy %s, want the default", p.Source)
			case tt.wantWave != "" && (p.IsDefault() || p.Source != tt.wantFile || p.Waves[0].Name != tt.wantWave):
				t.Errorf("policy %s (default %v), want %s's with wave %q", p.Source, p.IsDefault(), tt.wantFile, tt.wantWave)
			}
		})
	}
}

func TestIsPolicyFile(t *testing.T) {
	for name, want := range map[string]bool{".fleetwave.yaml": true, ".fleetwave.yml": true, "default": false, "": false, "fleetwave.yaml": false} {
		if got := IsPolicyFile(name); got != want {
			t.Errorf("IsPolicyFile(%q) = %v, want %v", name, got, want)
		}
	}
}
