// Package target is the Argo CD version fleetwave renders as, and the rules of manifest generation that change
// between Argo CD releases. Each rule cites the Argo CD source it follows (github.com/argoproj/argo-cd).
package target

import (
	"fmt"
	"strconv"
	"strings"

	k8sversion "k8s.io/apimachinery/pkg/util/version"
)

// Version is an Argo CD minor release line ("3.6"). The zero value means Newest.
type Version struct {
	Major, Minor int
}

// The supported Argo CD lines: 3.2 (the module fleetwave's API types come from) to 3.6 (the newest release).
var (
	Oldest = Version{3, 2}
	Newest = Version{3, 6}
)

// Parse reads "3.6", "v3.6" or "3.6.1" (a patch is accepted and ignored: no rule here changes within a line). An
// empty string is Newest. Versions outside Oldest..Newest are an error.
func Parse(s string) (Version, error) {
	if strings.TrimSpace(s) == "" {
		return Newest, nil
	}
	raw := strings.TrimPrefix(strings.TrimSpace(s), "v")
	parts := strings.SplitN(raw, ".", 3)
	if len(parts) < 2 {
		return Version{}, fmt.Errorf("argocd version %q: want MAJOR.MINOR, e.g. %s", s, Newest)
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || major < 0 || minor < 0 {
		return Version{}, fmt.Errorf("argocd version %q: want MAJOR.MINOR, e.g. %s", s, Newest)
	}
	if len(parts) == 3 {
		// "3.6.1", "3.6.1+abcdef" (the API's version string), "3.6.0-rc1": the patch must start with a digit.
		if p := parts[2]; p == "" || p[0] < '0' || p[0] > '9' {
			return Version{}, fmt.Errorf("argocd version %q: want MAJOR.MINOR, e.g. %s", s, Newest)
		}
	}
	v := Version{major, minor}
	if v.less(Oldest) || Newest.less(v) {
		return Version{}, fmt.Errorf("argocd version %s is not supported: fleetwave renders as Argo CD %s to %s", v, Oldest, Newest)
	}
	return v, nil
}

// String is "MAJOR.MINOR".
func (v Version) String() string {
	v = v.orNewest()
	return fmt.Sprintf("%d.%d", v.Major, v.Minor)
}

func (v Version) orNewest() Version {
	if v == (Version{}) {
		return Newest
	}
	return v
}

func (v Version) less(w Version) bool {
	return v.Major < w.Major || (v.Major == w.Major && v.Minor < w.Minor)
}

func (v Version) atLeast(major, minor int) bool { return !v.orNewest().less(Version{major, minor}) }

// RefRevisionsResolved reports that a multi-source Helm source sees each "$ref" source's targetRevision replaced
// by the commit the first ref on that ref's repository resolved to. Since 3.6 the repo-server's manifest cache key
// does it on the request itself (reposerver/cache/cache.go getRefTargetRevisionMappingForCacheKey, argo-cd v3.6.1:
// "forcefully update TargetRevision", through the *RefTarget pointers of q.RefSources, with the commits
// resolveReferencedSources resolved, the first ref per repository in value-file order), before runManifestGenAsync
// checks and checks out the refs; v3.2.11 builds the key from copies. So two refs on one repository at two revisions
// no longer fail ("cannot reference multiple revisions") but both read the first one's commit, and a ref's revision
// in "cannot reference a different revision" is that commit, not the targetRevision written. Seen on the real
// v3.6.1 (make e2e); 3.3 to 3.5 are not buildable here to check and keep the 3.2 behaviour.
func (v Version) RefRevisionsResolved() bool { return v.atLeast(3, 6) }

// Helm4 reports that Helm charts render with Helm 4. Argo CD 3.5 replaced its bundled helm 3.19.4 with helm 4
// (hack/tool-versions.sh: release-3.4 helm3_version=3.19.4, release-3.5 helm4_version=4.2.1) and has no Helm 3
// any more: util/helm/cmd.go NewCmd accepts helm.version "v3" only as another name of the bundled helm.
func (v Version) Helm4() bool { return v.atLeast(3, 5) }

// HelmCLI is the helm release Argo CD's repo-server image ships (hack/tool-versions.sh: 4.2.1 in release-3.5,
// 4.3.1 in v3.6.1, the newest 3.6 release and the one `make e2e` runs). The 3.2 line ships helm 3.18.4
// (and kustomize 5.7.0); it is rendered with the 3.19.4 of 3.3 and 3.4, the one Helm 3 SDK linked here.
func (v Version) HelmCLI() string {
	switch {
	case v.atLeast(3, 6):
		return "v4.3.1"
	case v.atLeast(3, 5):
		return "v4.2.1"
	}
	return "v3.19.4"
}

// HelmVersionValues are the values of spec.source.helm.version Argo CD accepts (util/helm/cmd.go NewCmd): "" and
// "v3" up to 3.4, "v4" too since 3.5.
func (v Version) HelmVersionValues() []string {
	if v.atLeast(3, 5) {
		return []string{"", "v3", "v4"}
	}
	return []string{"", "v3"}
}

// HelmVersionError is util/helm/cmd.go NewCmd's refusal of another spec.source.helm.version: the wording changed
// in 3.5.
func (v Version) HelmVersionError(got string) error {
	if v.atLeast(3, 5) {
		return fmt.Errorf("helm version '%s' is not supported", got)
	}
	return fmt.Errorf("helm chart version '%s' is not supported", got)
}

// ValueFileGlobs reports that glob patterns in helm.valueFiles are expanded. Added in Argo CD 3.4
// (reposerver/repository/repository.go getResolvedValueFiles, isGlobPath: absent in v3.3.0, present in v3.4.0);
// before, a pattern is an ordinary path that names no file.
func (v Version) ValueFileGlobs() bool { return v.atLeast(3, 4) }

// GitTagPrefix reports that a git source's tagPrefix is read: added in Argo CD 3.6 (ApplicationSource.TagPrefix;
// reposerver/repository/repository.go passes git.WithTagPrefix(source.TagPrefix), util/git/client.go lsRemote
// hands it to util/versions/tags.go MaxVersion): only tags with the prefix are candidates for a semver
// targetRevision, compared without it, and the tag found keeps it. Before, the field does not exist.
func (v Version) GitTagPrefix() bool { return v.atLeast(3, 6) }

// DirectoryExtensionFilterOption reports that a directory source's disableExtensionFilter is read: added in Argo
// CD 3.6 (pkg/apis/application/v1alpha1/types.go ApplicationSourceDirectory.DisableExtensionFilter,
// reposerver/repository/repository.go getPotentiallyValidManifestFile: with it set, files of any name are
// candidates and include/exclude are the only filters). Before, the field does not exist: only .yaml, .yml, .json
// and .jsonnet files are read, whatever the Application says.
func (v Version) DirectoryExtensionFilterOption() bool { return v.atLeast(3, 6) }

// ClusterVersion is the destination cluster's version as the application controller hands it to manifest
// generation, given the cluster's full version ("v1.30.5", "v1.30.5-eks-1234"). Since 3.4 Argo CD stores
// "v<major>.<minor>.<patch>" (gitops-engine pkg/utils/kube/ctl.go GetServerVersion, argo-cd #26469, "More
// detailed cluster version" in docs/operator-manual/upgrading/3.3-3.4.md); before, "<major>.<minor>", so Helm
// and plugins saw patch 0. A version that does not parse is passed on unchanged (the render reports it).
func (v Version) ClusterVersion(kube string) string {
	if kube == "" {
		return ""
	}
	kv, err := k8sversion.ParseGeneric(kube)
	if err != nil {
		return kube
	}
	if v.atLeast(3, 4) {
		return fmt.Sprintf("v%d.%d.%d", kv.Major(), kv.Minor(), kv.Patch())
	}
	return fmt.Sprintf("%d.%d", kv.Major(), kv.Minor())
}
