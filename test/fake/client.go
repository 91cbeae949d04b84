// Package fake is the AHP client of the end-to-end tests: the module's
// client (ahpclient) recording every frame, so tests can look at what
// came and wait for conditions instead of sleeping.
package fake

import (
	"context"
	"net/http"

	"github.com/changesetd/changesetd/ahpclient"
)

// Message is one JSON-RPC message received from the server.
type Message = ahpclient.Message

// RPCError is a JSON-RPC error response.
type RPCError = ahpclient.RPCError

// Client is a connection to the daemon that records what it receives.
type Client = ahpclient.Client

// Envelope is an action envelope with the action kept raw and typed.
type Envelope = ahpclient.Envelope

// Dial connects to url (ws://host/ahp?token=...) with optional headers.
func Dial(ctx context.Context, url string, h http.Header) (*Client, *http.Response, error) {
	return ahpclient.Dial(ctx, url, ahpclient.Options{Header: h, Record: true})
}
