// Package webhooks is the App's HTTP edge for GitHub webhooks: it turns a POST to Path into at most one call
// of a Handler, off the request, and answers GitHub fast.
//
// # What happens to a delivery
//
//  1. Before a byte of the body is read: X-Hub-Signature-256 must be "sha256=" and 64 hex digits → 401;
//     X-GitHub-Event must be a plain token (letters, digits, "-", "_", "."; at most 64 characters) and
//     X-GitHub-Delivery printable ASCII without spaces (at most 128) → 400; a Content-Length over the cap → 413. A stranger's request costs
//     no memory.
//  2. At most WithMaxConcurrentReads bodies (default 8) are read at once → 503 with Retry-After beyond,
//     unread. The body is capped (MaxPayloadBytes, GitHub's own maximum) → 413 beyond.
//  3. The signature is verified with go-github's github.ValidateSignature over the raw body and the App's
//     webhook secret → 401 when wrong. Nothing in the body is looked at before. A ping is answered 200 "pong".
//  4. Events the Handler does not declare in Handles are answered 204 without parsing.
//  5. The payload is parsed with github.ParseWebHook → 400 with the parser's message when it cannot be (for
//     example the recorded check_run "rerequested" examples, whose app.created_at is not RFC 3339).
//  6. Actions the Handler does not declare ("pull_request.labeled" when it asked for "pull_request.opened")
//     are answered 204.
//  7. A queue slot is reserved (→ 503 with Retry-After when the queue is full or the server is draining),
//     then the delivery id is recorded in the DeliveryStore: a delivery already recorded is answered 200
//     "duplicate delivery" and not handled again (GitHub redelivers with the same GUID).
//  8. The Event is queued for one of N workers and the request answered 202.
//
// The slot is reserved before the id is recorded on purpose: a delivery refused with 503 leaves no trace, so
// its redelivery is handled. The reverse order would turn every 503 into a lost event. Note that GitHub does
// not redeliver failed deliveries by itself: someone (or a job using the "redeliver" API) does, with the same
// GUID.
//
// # Semantics
//
// Handling is at most once per delivery id: a delivery is recorded when it is queued, so a crash between
// queueing and handling loses it (the use cases are recomputable: /plan, "Re-run" on a check run). On
// Shutdown the server stops accepting (503), lets the workers finish the queue, and at the deadline cancels
// the handlers' context; deliveries never started are then forgotten (DeliveryForgetter) so that a
// redelivery is handled by the next process.
//
// Handlers run with a context detached from the request; it carries a logger (LoggerFrom) with the delivery
// id, event, action, installation, repository and pull request attached. Panics are recovered and logged;
// errors are logged once, here.
package webhooks
