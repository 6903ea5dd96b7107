package main

import (
	"testing"

	"k8s.io/kubectl/pkg/util/i18n"
)

// The binary's packages are initialised (this test binary links the same ones) without kubectl's translation
// catalogue: i18n refuses SetLoadTranslationsFunc once LoadTranslations has run, so success means no package
// init called i18n.T before cmd/bot/internal/startup replaced the loader.
func TestKubectlTranslationsNotLoaded(t *testing.T) {
	if err := i18n.SetLoadTranslationsFunc(func() error { return nil }); err != nil {
		t.Fatalf("kubectl's translations were loaded during package init (a caller of i18n.T ran before cmd/bot/internal/startup): %v", err)
	}
	if got := i18n.T("Print the supported API resources on the server"); got != "Print the supported API resources on the server" {
		t.Errorf("i18n.T = %q, want the English text", got)
	}
}
