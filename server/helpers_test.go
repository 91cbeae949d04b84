package server

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
)

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func newRequest(host, origin string) *http.Request {
	r := httptest.NewRequest("GET", "http://"+host+"/ahp", nil)
	r.Host = host
	if origin != "" {
		r.Header.Set("Origin", origin)
	}
	return r
}
