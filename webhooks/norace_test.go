//go:build !race

package webhooks

const raceEnabled = false
