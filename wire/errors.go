package wire

import (
	"errors"

	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/lifecycle"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
)

// Code is what went wrong in one stable word, for a program: beside an
// error's sentence (for a person) and its exit code (the CLI's).
type Code string

// Codes, each with what it means.
var Codes = []struct {
	Code Code
	Doc  string
}{
	{CodeBadRequest, "the request cannot be understood as it stands (field, when set, says which)"},
	{CodeBadJSON, "the body is not one JSON object"},
	{CodeUnknownField, "the body or query names a field the operation does not take (field)"},
	{CodeWrongType, "a field's value is of the wrong kind (field)"},
	{CodeTooLarge, "the body is larger than 16 MiB"},
	{CodeInvalidName, "a team, agent or other name is not valid"},
	{CodeNotFound, "the agent, team, request or message does not exist"},
	{CodeNoRoute, "no operation has this path"},
	{CodeNoMethod, "the path takes other methods (Allow says which)"},
	{CodeUnauthorized, "over TCP, the request carries no valid token"},
	{CodeIDTaken, "a message with the id the app chose is recorded already, and it is not this one"},
	{CodeStateConflict, "the message is in a state the change does not apply to, or is being typed now"},
	{CodeExists, "what is to be made is there already (an agent's session)"},
	{CodeTimeout, "nothing came within the time asked for (wait: exit_code 7)"},
	{CodeError, "anything else: the error says what"},
}

// Error codes.
const (
	CodeBadRequest    Code = "bad_request"
	CodeBadJSON       Code = "bad_json"
	CodeUnknownField  Code = "unknown_field"
	CodeWrongType     Code = "wrong_type"
	CodeTooLarge      Code = "too_large"
	CodeInvalidName   Code = "invalid_name"
	CodeNotFound      Code = "not_found"
	CodeNoRoute       Code = "no_route"
	CodeNoMethod      Code = "method_not_allowed"
	CodeUnauthorized  Code = "unauthorized"
	CodeIDTaken       Code = "id_taken"
	CodeStateConflict Code = "state_conflict"
	CodeExists        Code = "exists"
	CodeTimeout       Code = "timeout"
	CodeError         Code = "error"
)

// ErrorWord is the Code of an error from the engine, as ErrorCode is its
// exit code.
func ErrorWord(err error) Code {
	var se *courier.StateError
	var taken *courier.IDTakenError
	var fe *FieldError
	switch {
	case errors.As(err, &fe):
		return CodeWrongType
	case errors.Is(err, target.ErrInvalid), errors.Is(err, mailbox.ErrBadName):
		return CodeInvalidName
	case errors.As(err, &taken), errors.Is(err, service.ErrDuplicateID):
		return CodeIDTaken
	case errors.As(err, &se), errors.Is(err, courier.ErrBeingTyped):
		return CodeStateConflict
	case errors.Is(err, lifecycle.ErrExists):
		return CodeExists
	case errors.Is(err, config.ErrInvalid), errors.Is(err, dispatch.ErrEmptyMessage), errors.Is(err, dispatch.ErrSelf),
		errors.Is(err, mailbox.ErrProtocol), errors.Is(err, service.ErrNoCallerTeam):
		return CodeBadRequest
	case ErrorCode(err) == ExitNotFound:
		return CodeNotFound
	case errors.Is(err, delivery.ErrNotReady):
		return CodeError
	}
	if ErrorCode(err) == ExitUsage {
		return CodeBadRequest
	}
	return CodeError
}
