// Package startup makes the binary's package initialisation cheaper: it is imported by cmd/bot for its init,
// which must run before the heavy initialisations it stands in for.
//
// kubectl's command packages (linked in through gitops-engine's pkg/utils/kube, which Argo CD's types import)
// translate their help texts at package init with k8s.io/kubectl/pkg/util/i18n.T, whose first call loads a
// translation catalogue (pkg/util/i18n/i18n.go LoadTranslations: the language's .po and .mo files zipped in
// memory with compress/flate, then parsed by chai2010/gettext-go): about a quarter of `fleetwave version`'s CPU,
// paid again by every render worker. fleetwave never prints those texts, and the "default" and en_US catalogues
// are identities (only their header differs), so the catalogue is not loaded: T returns its English text.
//
// Go initialises a package once its imports are, the first in import-path order among those ready
// (https://go.dev/ref/spec#Package_initialization): this package's path sorts before every k8s.io package, and
// it imports nothing that calls T, so its init runs as soon as i18n's has and before any caller of T.
// TestKubectlTranslationsNotLoaded in cmd/bot checks that order in the binary's real import graph.
package startup

import "k8s.io/kubectl/pkg/util/i18n"

func init() {
	// Assigned rather than set with i18n.SetLoadTranslationsFunc, which would mark the translations loaded: left
	// unmarked, SetLoadTranslationsFunc still succeeds afterwards, which is how the test sees that the catalogue
	// was never loaded.
	i18n.LoadTranslationsFunc = func() error { return nil }
}
