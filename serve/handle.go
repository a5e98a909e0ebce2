package serve

import (
	"errors"
	"net/http"

	"github.com/agentmsg/agentmsg/service"
)

// Every operation that calls the service has the same shape, written
// once here (handle): its request is decoded into its wire type (a GET's
// query, else the body), checked and turned into the service's terms
// (its check: who asks, and what), the caller's service is made, the
// service is called and its result worded as the operation's answer (its
// call). What an operation says of its own is in those two functions;
// the operations that answer otherwise (the event stream, the OpenAPI
// document, the CLI's passthrough, the version) are handlers of their own.

// A check reads a decoded request In: it refuses what cannot be served
// (an error, answered before any service is made), and says who asks
// (the Caller, whose service is made) and what the call is to do (Req).
// It may fill in In's defaults.
type check[In, Req any] func(d *Daemon, r *http.Request, in *In) (Caller, Req, error)

// A call asks the caller's service to do what its check made of the
// request, and words the result as the operation's answer.
type call[Req any] func(d *Daemon, r *http.Request, svc *service.Service, req Req) (answer, error)

// answer is an operation's document and its HTTP status.
type answer struct {
	status int
	doc    any
}

// answerOf is doc with the HTTP status of its exit code (statusOf).
func answerOf(code int, doc any) answer { return answer{statusOf(code), doc} }

// refusal is a request an operation refuses as it stands, with its HTTP
// status (400 but for a conflict) and the field it is about.
type refusal struct {
	status int
	field  string
	err    error
}

func (e *refusal) Error() string { return e.err.Error() }
func (e *refusal) Unwrap() error { return e.err }

// badRequest refuses a request with 400, about field ("" when none).
func badRequest(field string, err error) error {
	return &refusal{status: http.StatusBadRequest, field: field, err: err}
}

// errClientGone ends an operation whose client went away: there is no
// one to answer.
var errClientGone = errors.New("the client is gone")

// handle is the handler of an operation: check, then call (above).
func handle[In, Req any](check check[In, Req], call call[Req]) func(*Daemon, http.ResponseWriter, *http.Request) {
	return func(d *Daemon, w http.ResponseWriter, r *http.Request) {
		var in In
		var decoded bool
		switch r.Method {
		case http.MethodGet, http.MethodHead: // a GET pattern serves HEAD too
			decoded = decodeQuery(w, r, &in)
		default:
			decoded = decode(w, r, &in)
		}
		if !decoded {
			return
		}
		c, req, err := check(d, r, &in)
		if err != nil {
			failWith(w, err)
			return
		}
		svc, ok := d.serviceFor(w, c)
		if !ok {
			return
		}
		a, err := call(d, r, svc, req)
		switch {
		case errors.Is(err, errClientGone):
		case err != nil:
			failWith(w, err)
		default:
			respondStatus(w, a.status, a.doc)
		}
	}
}

// as is the check of a request that needs none: its caller is
// caller(in), and the call takes the request as it came.
func as[In any](caller func(In) Caller) check[In, In] {
	return func(_ *Daemon, _ *http.Request, in *In) (Caller, In, error) { return caller(*in), *in, nil }
}

// failWith answers err: a refusal with its status and field, any other
// error with the status its exit code maps to (fail).
func failWith(w http.ResponseWriter, err error) {
	var rf *refusal
	if errors.As(err, &rf) {
		failCode(w, rf.status, "", rf.field, rf.err)
		return
	}
	fail(w, 0, err)
}
