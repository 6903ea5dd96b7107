//go:build race

package webhooks

// raceEnabled relaxes timing assertions: the race detector slows the server several-fold.
const raceEnabled = true
