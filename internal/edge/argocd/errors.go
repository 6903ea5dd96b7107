package argocd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/fleetwave/fleetwave/internal/kit/text"
)

// Sentinel errors, matched with errors.Is against the *APIError a call returns. They follow the gRPC codes Argo CD's
// API server answers with; grpc-gateway v1 (runtime/errors.go HTTPStatusFromCode) maps them to HTTP statuses
// (FailedPrecondition → 400, NotFound → 404, PermissionDenied → 403, Unauthenticated → 401).
var (
	ErrInvalidArgument    = errors.New("invalid argument")
	ErrNotFound           = errors.New("not found")
	ErrAlreadyExists      = errors.New("already exists")
	ErrPermissionDenied   = errors.New("permission denied")
	ErrUnauthenticated    = errors.New("unauthenticated")
	ErrFailedPrecondition = errors.New("failed precondition")
	ErrUnavailable        = errors.New("unavailable")
	// ErrOperationInProgress is a FailedPrecondition whose message says another operation is running
	// (util/argo/argo.go ErrAnotherOperationInProgress): the sync or rollback was refused, nothing was started.
	ErrOperationInProgress = errors.New("another operation is already in progress")
)

// operationInProgressText is the message Argo CD returns when an operation is already set on the app
// (util/argo/argo.go: ErrAnotherOperationInProgress).
const operationInProgressText = "another operation is already in progress"

// APIError is an error answer of the Argo CD API: the gRPC code and message of grpc-gateway's error body
// ({"error","code","message","details"}), or, for answers that are not Argo CD's (a proxy's 502 page), the HTTP
// status with the gRPC code inferred from it.
type APIError struct {
	HTTPStatus int
	Code       codes.Code
	Message    string

	retryAfter time.Duration // from a Retry-After header
	// fromArgoCD: the body is grpc-gateway's error, so Argo CD's API server itself answered (not a proxy).
	fromArgoCD bool
}

func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.HTTPStatus)
	}
	return fmt.Sprintf("argo cd answered %d %s: %s", e.HTTPStatus, e.Code, msg)
}

// Is matches the package's sentinel errors by gRPC code.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrInvalidArgument:
		return e.Code == codes.InvalidArgument
	case ErrNotFound:
		return e.Code == codes.NotFound
	case ErrAlreadyExists:
		return e.Code == codes.AlreadyExists
	case ErrPermissionDenied:
		return e.Code == codes.PermissionDenied
	case ErrUnauthenticated:
		return e.Code == codes.Unauthenticated
	case ErrFailedPrecondition:
		return e.Code == codes.FailedPrecondition
	case ErrUnavailable:
		return e.Code == codes.Unavailable
	case ErrOperationInProgress:
		return e.Code == codes.FailedPrecondition && strings.Contains(e.Message, operationInProgressText)
	}
	return false
}

// retryable reports whether the request may be sent again: 5xx (except 501) and 429. A 4xx never is.
func (e *APIError) retryable() bool {
	switch {
	case e.HTTPStatus == http.StatusTooManyRequests:
		return true
	case e.HTTPStatus == http.StatusNotImplemented:
		return false
	case e.HTTPStatus >= 500:
		return true
	}
	return false
}

// unacted reports whether the answer says the request was not acted on, so that a request starting an operation
// may be sent again: a 429, a 503 (no server took it: a proxy without an upstream, or Argo CD's Unavailable), or
// any 5xx of Argo CD's own API server (its handler returned an error before an operation was set). A proxy's 500,
// 502 or 504 says nothing of whether Argo CD got the request, and a gateway timeout often means it did.
func (e *APIError) unacted() bool {
	switch {
	case e.HTTPStatus == http.StatusTooManyRequests, e.HTTPStatus == http.StatusServiceUnavailable:
		return true
	case e.HTTPStatus >= 500:
		return e.fromArgoCD
	}
	return false
}

// IsTransient reports whether err may go away by itself: a 5xx (but 501) or 429 answer, a connection error, a
// timeout. A 4xx answer (a refusal) and a cancelled context are not transient.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.retryable()
	}
	var ve *validationError
	return !errors.As(err, &ve)
}

// validationError is a request the client refused to send (an invalid name): never transient.
type validationError struct{ msg string }

func (e *validationError) Error() string { return e.msg }

// gatewayError is grpc-gateway v1's error body (runtime/errors.go DefaultHTTPError).
type gatewayError struct {
	Error   string     `json:"error"`
	Code    codes.Code `json:"code"`
	Message string     `json:"message"`
}

// maxErrorBody caps how much of an error answer is read.
const maxErrorBody = 64 << 10

// parseAPIError reads an error answer. The body is closed by the caller.
func parseAPIError(resp *http.Response) *APIError {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &APIError{HTTPStatus: resp.StatusCode, Code: codeFromHTTP(resp.StatusCode)}
	var ge gatewayError
	if json.Unmarshal(body, &ge) == nil && (ge.Message != "" || ge.Error != "" || ge.Code != 0) {
		if ge.Code != 0 {
			e.Code = ge.Code
		}
		e.fromArgoCD = true
		e.Message = ge.Message
		if e.Message == "" {
			e.Message = ge.Error
		}
		return e
	}
	// A body that is not a gRPC-gateway error (a proxy's HTML page): on one line, cut to 200 characters.
	e.Message = text.OneLine(string(body))
	if r := []rune(e.Message); len(r) > 200 {
		e.Message = string(r[:200]) + "…"
	}
	return e
}

// codeFromHTTP infers a gRPC code from an HTTP status, the inverse of grpc-gateway's mapping where it is unique.
func codeFromHTTP(status int) codes.Code {
	switch status {
	case http.StatusBadRequest:
		return codes.InvalidArgument
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusForbidden:
		return codes.PermissionDenied
	case http.StatusNotFound:
		return codes.NotFound
	case http.StatusConflict:
		return codes.Aborted
	case http.StatusTooManyRequests:
		return codes.ResourceExhausted
	case http.StatusNotImplemented:
		return codes.Unimplemented
	case http.StatusServiceUnavailable:
		return codes.Unavailable
	case http.StatusGatewayTimeout:
		return codes.DeadlineExceeded
	}
	return codes.Unknown
}

// IsMissingApp reports whether a read of an app (GET without a project) says it is not there: NotFound, or the
// PermissionDenied with which Argo CD answers for an app that does not exist as well as for one the token may
// not read (server/application/application.go getAppEnforceRBAC). Either way the bot cannot work on the app.
func IsMissingApp(err error) bool {
	return errors.Is(err, ErrNotFound) || errors.Is(err, ErrPermissionDenied)
}
