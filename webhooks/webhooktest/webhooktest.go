// Package webhooktest signs webhook deliveries as GitHub does, for tests that post them to the App's server. It
// is imported by tests only.
package webhooktest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// Sign is the X-Hub-Signature-256 header GitHub sends with body when the webhook's secret is secret:
// "sha256=" and the hex HMAC-SHA256 of the body.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}
