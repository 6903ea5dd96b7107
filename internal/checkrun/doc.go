// Package checkrun presents a rollout as GitHub check-runs on its merge commit: fleetwave/rollout, one
// fleetwave/wave: <name> per wave and fleetwave/rollback once a rollback was asked for. It builds them from the
// executor's rollout.Snapshot (titles, summaries, the tables of apps, the buttons) and publishes the ones that
// changed through a Writer (internal/app/executor.Reporter writes them with the installation's token).
//
// A check-run's external id names the rollout and the wave or the rollback (ParseExternalID), and each button's
// identifier is the slash command it stands for (command.FromAction), so a click finds its rollout and wave.
//
// Publisher is the executor's rollout.Reporter port; it holds no state of its own (the executor keeps what was
// last sent per driver, rollout.Sent).
package checkrun
