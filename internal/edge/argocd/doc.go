// Package argocd is fleetwave's adapter to Argo CD's REST API (the grpc-gateway in front of argocd-server).
//
// It speaks JSON over net/http with Argo CD's own API types (pkg/apis/application/v1alpha1) and small request
// structs restating server/application/application.proto, so it does not link the server or grpc-gateway.
//
// What it guarantees:
//   - every call takes a context; unary calls are bounded by Options.Timeout per attempt;
//   - 5xx (but 501), 429 and connection errors are retried with jittered exponential backoff (Retry-After
//     honoured); a 4xx never is;
//   - error answers become *APIError carrying the gRPC code of grpc-gateway's body {"error","code","message"},
//     matched with errors.Is against ErrNotFound, ErrFailedPrecondition, ErrOperationInProgress,
//     ErrPermissionDenied, ErrUnauthenticated, ErrInvalidArgument, ...;
//   - Watch follows GET /api/v1/stream/applications in either encoding (newline-delimited JSON by default on the
//     server, server-sent events with Accept: text/event-stream), reopens dropped or idle connections with
//     backoff and resumes after the highest resourceVersion seen. Argo CD does not replay what happened while
//     the stream was down, so OnConnect(reconnect=true) tells the consumer to re-read what it waits for.
//     WatchQuery.OmitFields asks the server to leave paths out of every event (the `fields` parameter).
//
// Timestamps in Argo CD's answers (operationState.startedAt/finishedAt, reconciledAt) are RFC 3339 with
// seconds: consumers comparing them must allow for equal seconds (see package argosync).
//
// Consumers declare the narrow interface they need in their own package; *Client satisfies it. The
// argocdsim sub-package is an in-memory Argo CD for tests, benchmarks and the demo; the contract sub-package
// holds the tests that both it and a real Argo CD must pass.
package argocd
