// Package command reads fleetwave's slash commands from PR comments and decides who may run them. It is pure:
// it says what to do and what to reply, the caller (internal/app) does it — the shape of atlantis's
// server/events/comment_parser.go.
//
// # Grammar
//
// A comment is a command when its first non-blank line starts with "/" followed by a letter:
//
//	/pause                  stop starting syncs (those in flight finish)
//	/resume                 continue a paused rollout (a wave that failed retries its failed apps)
//	/abort                  end the rollout: no new syncs, nothing is rolled back
//	/approve [wave]         pass the approval gate of a wave (default: the wave awaiting approval)
//	/rollback [wave|all]    sync the apps the rollout touched back to their previous revision (default: all)
//	/plan                   recompute the wave plan
//	/acknowledge            acknowledge the risk classes the policy asks a person to acknowledge (current head only)
//	/help                   list the commands
//
// Only that first line counts: the lines after it are free text (a reason, a quote), and a "/" further down
// never runs anything, so a reply quoting a command cannot repeat it. Arguments are split like a shell
// would (github.com/google/shlex): /approve "eu west". Command names are case-insensitive.
//
// Parse returns a Result: Ignore when the comment is not for fleetwave (no leading "/", a path like
// /etc/hosts, the bot's own comment, another bot's); Response when the bot must answer instead of acting
// (help, an unknown command — which gets the help, not silence — or a usage error); otherwise Command and its
// Args and Target.
//
// # Authorisation
//
// Authorize is a pure function of the command, the comment's context and the release policy: commands in an
// edited comment and comments on a PR from a fork are refused (the edit could change what a reviewer saw; a
// fork's author is not a collaborator of the repository), then plan.Policy.Allowed applies the policy's
// commands rules (GitHub permission or team slugs; defaults: write for rollout commands and /acknowledge, triage
// for /plan) and, for /approve, the wave's approval teams. /help is always allowed. The Decision carries the reason to reply.
//
// Check-run buttons (check_run requested_action) go through FromAction, which maps a button identifier to the
// same Result, so a button and a slash command are authorised alike.
package command
