package helm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/provenance"

	"github.com/fleetwave/fleetwave/internal/render/repofs"
)

// checkDependencies is helm's pkg/action/install.go CheckDependencies: every requirement of Chart.yaml must be
// present in charts/ (by chart name). Its message is what util/helm/helm.go IsMissingDependencyErr looks for.
func checkDependencies(ch *chart.Chart) error {
	var missing []string
outer:
	for _, r := range ch.Metadata.Dependencies {
		for _, d := range ch.Dependencies() {
			if d.Name() == r.Name {
				continue outer
			}
		}
		missing = append(missing, r.Name)
	}
	if len(missing) > 0 {
		return fmt.Errorf("found in Chart.yaml, but missing in charts/ directory: %s", strings.Join(missing, ", "))
	}
	return nil
}

// buildDependencies is `helm dependency build` (pkg/downloader/manager.go Build/Update, downloadAll,
// tarFromLocalDir, safeMoveDeps), which reposerver/repository/repository.go helmTemplate runs when a dependency
// is missing, done offline on the chart's files:
//   - the Chart.lock (when present) must match Chart.yaml, and then its pinned entries are built;
//   - `repository: ""` dependencies must already be charts/<name> directories satisfying the version;
//   - `file://` dependencies are loaded from their directory inside the checkout (confined) and added as the
//     archive helm would package (<name>-<version>.tgz replaces a file of that name);
//   - dependencies from chart repositories (https, @alias, oci://): a vendored copy under charts/ that satisfies
//     the version stands for the download; otherwise the archive is downloaded through in.Charts (the allowed
//     repositories only) and added as charts/<name>-<version>.tgz, as the downloader saves it; without
//     in.Charts the build fails;
//   - chart archives under charts/ that the build did not produce are deleted, unless they hold a
//     `repository: ""` dependency, as safeMoveDeps does.
//
// It returns the chart's files as they would be after the build.
func (e *Engine) buildDependencies(ctx context.Context, in Input, dir string, ch *chart.Chart, cf *chartFiles) (*chartFiles, error) {
	deps := ch.Metadata.Dependencies
	if ch.Lock != nil {
		if err := checkLock(ch); err != nil {
			return nil, err
		}
		deps = ch.Lock.Dependencies
	}

	// Top-level entries of charts/: archives (files directly in it) and directories.
	archives := map[string][]byte{}
	groups := map[string]bool{}
	for _, f := range cf.files {
		rest, ok := strings.CutPrefix(f.Name, "charts/")
		if !ok {
			continue
		}
		g, _, isDir := strings.Cut(rest, "/")
		groups[g] = true
		if !isDir {
			archives[g] = f.Data
		}
	}
	archiveChart := map[string]*chart.Chart{} // loadable chart archives by file name
	for name, data := range archives {
		if c, err := loader.LoadArchive(bytes.NewReader(data)); err == nil {
			archiveChart[name] = c
		}
	}

	packaged := map[string]bool{} // archive names of packaged file:// dependencies
	kept := map[string]bool{}     // vendored archives standing for a download
	localDep := map[string]bool{}
	var added []*loader.BufferedFile
	for _, dep := range deps {
		if dep == nil {
			continue
		}
		switch {
		case dep.Repository == "":
			localDep[dep.Name] = true
			sub, err := e.loadDir(in.FS, path.Join(dir, "charts", dep.Name))
			if err != nil {
				return nil, fmt.Errorf("unable to load chart 'charts/%s': %w", dep.Name, err)
			}
			constraint, err := semver.NewConstraint(dep.Version)
			if err != nil {
				return nil, fmt.Errorf("dependency %s has an invalid version/constraint format: %w", dep.Name, err)
			}
			v, err := semver.NewVersion(sub.Metadata.Version)
			if err != nil {
				return nil, fmt.Errorf("invalid version %s for dependency %s: %w", dep.Version, dep.Name, err)
			}
			if !constraint.Check(v) {
				return nil, fmt.Errorf("dependency %s at version %s does not satisfy the constraint %s", dep.Name, sub.Metadata.Version, dep.Version)
			}
		case strings.HasPrefix(dep.Repository, "file://"):
			p := strings.TrimPrefix(dep.Repository, "file://")
			if strings.HasPrefix(p, "/") {
				return nil, fmt.Errorf("dependency %s: repository %s is an absolute path outside the repository: %w", dep.Name, dep.Repository,
					&repofs.Refusal{Rule: repofs.RuleAbsolutePath, Path: p, Detail: "file:// dependencies must be relative to the chart"})
			}
			local, err := repofs.Clean(path.Join(dir, p))
			if err != nil {
				return nil, fmt.Errorf("dependency %s: repository %s: %w", dep.Name, dep.Repository, err)
			}
			if _, err := in.FS.Stat(local); errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("dependency %s: directory %s not found", dep.Name, local)
			} else if err != nil {
				return nil, fmt.Errorf("dependency %s: %w", dep.Name, err)
			}
			subFiles, err := readChartDir(in.FS, local, e.limits)
			if err != nil {
				return nil, fmt.Errorf("dependency %s: %w", dep.Name, err)
			}
			sub, err := e.load(subFiles)
			if err != nil {
				return nil, fmt.Errorf("dependency %s: loading %s: %w", dep.Name, local, err)
			}
			constraint, err := semver.NewConstraint(dep.Version)
			if err != nil {
				return nil, fmt.Errorf("dependency %s has an invalid version/constraint format: %w", dep.Name, err)
			}
			v, err := semver.NewVersion(sub.Metadata.Version)
			if err != nil {
				return nil, fmt.Errorf("dependency %s: %s: %w", dep.Name, local, err)
			}
			if !constraint.Check(v) {
				return nil, fmt.Errorf("can't get a valid version for dependency %s", dep.Name)
			}
			// chartutil.Save names the package <name>-<version>.tgz; LoadFiles skips names starting with _ or .
			archive := fmt.Sprintf("%s-%s.tgz", sub.Name(), sub.Metadata.Version)
			packaged[archive] = true
			if strings.IndexAny(archive, "_.") == 0 {
				continue
			}
			// The packaged chart holds the same files; add them as a subchart directory of a fresh name.
			g := strings.TrimSuffix(archive, ".tgz")
			for i := 1; groups[g]; i++ {
				g = fmt.Sprintf("%s~%d", strings.TrimSuffix(archive, ".tgz"), i)
			}
			groups[g] = true
			for _, f := range subFiles.files {
				added = append(added, &loader.BufferedFile{Name: "charts/" + g + "/" + f.Name, Data: f.Data})
			}
		default:
			found := false
			if constraint, err := semver.NewConstraint(dep.Version); err == nil {
				for name, c := range archiveChart {
					if v, err := semver.NewVersion(c.Metadata.Version); err == nil && c.Name() == dep.Name && constraint.Check(v) {
						kept[name] = true
						found = true
					}
				}
				for _, c := range ch.Dependencies() { // vendored as a directory
					if v, err := semver.NewVersion(c.Metadata.Version); err == nil && c.Name() == dep.Name && constraint.Check(v) {
						found = true
					}
				}
			}
			if !found && in.Charts != nil {
				data, version, err := in.Charts.Archive(ctx, dep.Repository, dep.Name, dep.Version)
				if err != nil {
					return nil, &markedError{msg: fmt.Sprintf("chart dependency %q (version %q): %v", dep.Name, dep.Version, err),
						marks: []error{ErrMissingDependency, err}}
				}
				archive := fmt.Sprintf("%s-%s.tgz", dep.Name, version)
				packaged[archive] = true
				added = append(added, &loader.BufferedFile{Name: "charts/" + archive, Data: data})
				found = true
			}
			if !found {
				how := "no allowed repositories are configured to fetch it from (--repositories, FLEETWAVE_REPOSITORIES_FILE)"
				return nil, &markedError{
					msg: fmt.Sprintf("chart dependency %q (repository %q, version %q) is not vendored under %s/charts and %s",
						dep.Name, dep.Repository, dep.Version, dir, how),
					marks: []error{ErrMissingDependency, ErrRemote},
				}
			}
		}
	}

	files := make([]*loader.BufferedFile, 0, len(cf.files)+len(added))
	for _, f := range cf.files {
		if a, ok := strings.CutPrefix(f.Name, "charts/"); ok && !strings.Contains(a, "/") {
			if packaged[a] {
				continue // overwritten by the package of the same name
			}
			if c := archiveChart[a]; c != nil && !kept[a] && !localDep[c.Name()] {
				continue // outdated: deleted by safeMoveDeps
			}
		}
		files = append(files, f)
	}
	files = append(files, added...)
	return &chartFiles{files: files, hash: hashFiles(files)}, nil
}

func (e *Engine) loadDir(fsys *repofs.FS, dir string) (*chart.Chart, error) {
	cf, err := readChartDir(fsys, dir, e.limits)
	if err != nil {
		return nil, err
	}
	return e.load(cf)
}

// checkLock is the digest check of pkg/downloader/manager.go Build (internal/resolver HashReq, HashV2Req).
func checkLock(ch *chart.Chart) error {
	req := ch.Metadata.Dependencies
	sum, err := digest([2][]*chart.Dependency{req, ch.Lock.Dependencies})
	if err == nil && sum == ch.Lock.Digest {
		return nil
	}
	if ch.Metadata.APIVersion == chart.APIVersionV1 {
		if v2, err := digest(map[string][]*chart.Dependency{"dependencies": req}); err == nil && v2 == ch.Lock.Digest {
			return nil
		}
		return errors.New("the lock file (requirements.lock) is out of sync with the dependencies file (requirements.yaml). Please update the dependencies")
	}
	return errors.New("the lock file (Chart.lock) is out of sync with the dependencies file (Chart.yaml). Please update the dependencies")
}

func digest(v interface{}) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	s, err := provenance.Digest(bytes.NewBuffer(data))
	return "sha256:" + s, err
}

// markedError is an error that matches sentinel errors (errors.Is) without spelling them out.
type markedError struct {
	msg   string
	marks []error
}

func (e *markedError) Error() string { return e.msg }

func (e *markedError) Is(target error) bool {
	for _, m := range e.marks {
		if m == target || errors.Is(m, target) {
			return true
		}
	}
	return false
}
