//go:build !race

package fleetview

const raceEnabled = false
