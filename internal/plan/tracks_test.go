package plan

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
)

func withRisks(a App, classes ...string) App {
	for _, c := range classes {
		a.Risks = append(a.Risks, Risk{Class: c, Resource: "apps/Deployment shop/" + a.Name, Detail: c + " detail"})
	}
	return a
}

// approvals lists the waves that wait for an approval before they start.
func approvals(p *Plan) string {
	var out []string
	for _, w := range p.Waves {
		if w.Gates.Approval.Before() {
			out = append(out, w.Name)
		}
	}
	return strings.Join(out, " ")
}

func TestTracks(t *testing.T) {
	data, err := os.ReadFile("testdata/policies/tracks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pol := parse(t, string(data))
	canary := func(name string, classes ...string) App {
		return withRisks(app(name, "c-"+name, lbl("env", "canary"), nil), classes...)
	}
	prod := func(name string, classes ...string) App {
		return withRisks(app(name, "p-"+name, lbl("env", "prd"), nil), classes...)
	}
	tests := []struct {
		name                   string
		apps                   []App
		placement, approvals   string
		tracks                 string // name:apps:class of why
		waveTracks, appsTracks string
	}{
		{"metadata only goes everywhere in one wave",
			[]App{canary("a", "metadata"), prod("b", "metadata"), prod("c", "scale", "metadata")},
			"everywhere: [a b c]", "", "everywhere:3:metadata", "everywhere", "a=everywhere b=everywhere c=everywhere"},
		{"images take the policy's waves",
			[]App{canary("a", "image", "metadata"), prod("b", "image")},
			"canary: [a] | regions: [b]", "", "images:2:image", "images|images", "a=images b=images"},
		{"CRD changes wait for an approval before every wave",
			[]App{canary("a", "crd"), prod("b", "crd-removed", "image")},
			"canary: [a] | regions: [b]", "canary regions", "careful:2:crd", "careful|careful", "a=careful b=careful"},
		{"the strictest track wins per app, and for the wave its apps share",
			[]App{canary("a", "metadata"), prod("b", "metadata", "rbac-widened"), prod("c", "image"), prod("d", "metadata", "other")},
			"everywhere: [a] | regions: [b c d]", "regions", "careful:1:rbac-widened, images:1:image, everywhere:1:metadata, standard:1:other",
			"everywhere|careful,images,standard", "a=everywhere b=careful c=images d=standard"},
		{"no class: the policy's waves",
			[]App{canary("a"), prod("b")},
			"canary: [a] | regions: [b]", "", "standard:2:", "standard|standard", "a=standard b=standard"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Build(pol, tt.apps)
			if got := placement(p); got != tt.placement {
				t.Errorf("placement = %q, want %q", got, tt.placement)
			}
			if got := approvals(p); got != tt.approvals {
				t.Errorf("approval before = %q, want %q", got, tt.approvals)
			}
			var uses, waveTracks, appTracks []string
			for _, u := range p.Tracks {
				why := ""
				if u.Why != nil {
					why = u.Why.Class
				}
				uses = append(uses, u.Name+":"+strconv.Itoa(u.Apps)+":"+why)
			}
			for _, w := range p.Waves {
				waveTracks = append(waveTracks, strings.Join(w.Tracks, ","))
				for _, b := range w.Batches {
					for _, a := range b.Apps {
						appTracks = append(appTracks, a.Name+"="+a.Track)
					}
				}
			}
			if got := strings.Join(uses, ", "); got != tt.tracks {
				t.Errorf("tracks = %q, want %q", got, tt.tracks)
			}
			if got := strings.Join(waveTracks, "|"); got != tt.waveTracks {
				t.Errorf("wave tracks = %q, want %q", got, tt.waveTracks)
			}
			if got := strings.Join(appTracks, " "); got != tt.appsTracks {
				t.Errorf("app tracks = %q, want %q", got, tt.appsTracks)
			}
			if !p.OK() {
				t.Errorf("violations: %s", violations(p))
			}
		})
	}
}

// Without tracks nothing of them shows: plans of existing policies are unchanged.
func TestNoTracksNoTrackFields(t *testing.T) {
	p := Build(parse(t, head+"  - {name: every, selector: {}}\n"), []App{withRisks(app("a", "c1", nil, nil), "crd")})
	if p.Tracks != nil || p.Waves[0].Tracks != nil || p.Waves[0].Batches[0].Apps[0].Track != "" || p.Waves[0].Gates.Approval != nil {
		t.Fatalf("a policy without tracks shows tracks: %+v", p)
	}
}

// The plan says which track the change got and why: the class and the resource that put it there.
func TestTrackOutput(t *testing.T) {
	data, err := os.ReadFile("testdata/policies/tracks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := Build(parse(t, string(data)), []App{
		withRisks(app("web", "p1", lbl("env", "prd"), nil), "image"),
		withRisks(app("ns", "p2", lbl("env", "prd"), nil), "metadata"),
	})
	var md, txt bytes.Buffer
	if err := p.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	wantMD := "**Tracks**: `images` (the policy's waves) for 1 app, because of `image` in apps/Deployment shop/web: image detail; " +
		"`everywhere` (one wave, no soak) for 1 app, because of `metadata` in apps/Deployment shop/ns: metadata detail.\n"
	if !strings.Contains(md.String(), wantMD) {
		t.Errorf("markdown lacks %q:\n%s", wantMD, md.String())
	}
	for _, want := range []string{
		"track images (the policy's waves): 1 app, because of image in apps/Deployment shop/web: image detail\n",
		"  tracks: everywhere\n",
	} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, txt.String())
		}
	}
}
