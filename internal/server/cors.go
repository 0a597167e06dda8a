package server

import (
	"net/http"
	"strconv"
	"time"
)

// What a page of an allowed origin may send and read, for CORS.
const (
	corsAllowMethods = "GET, POST, DELETE, OPTIONS"
	corsAllowHeaders = "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID"
	// corsExposeHeaders are the response headers a page may read besides
	// the few CORS always shows: the session id it must send back, the
	// protocol version, and the challenge of a 401.
	corsExposeHeaders = "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate"
	// corsMaxAge is how long a browser may reuse a preflight's answer.
	corsMaxAge = 10 * time.Minute
)

// cors lets the browser pages of allowed origins (loopback ones and
// --allowed-origins) call the server: it answers their preflight requests
// (OPTIONS with Access-Control-Request-Method, which browsers send
// without credentials, so before the token check) and marks the answers to
// their requests as readable by them. Requests from other origins pass
// unmarked to the guard, which refuses them with 403. No credentials mode:
// the token travels in the Authorization header the page sets, never in a
// cookie.
func (g *guard) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Add("Vary", "Origin")
		if !g.originAllowed(origin) {
			next.ServeHTTP(w, r)
			return
		}
		h.Set("Access-Control-Allow-Origin", origin)
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Add("Vary", "Access-Control-Request-Method, Access-Control-Request-Headers")
			h.Set("Access-Control-Allow-Methods", corsAllowMethods)
			h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
			h.Set("Access-Control-Max-Age", strconv.Itoa(int(corsMaxAge/time.Second)))
			// A page of a public origin the operator allowed may reach
			// this server on a private address (Private Network Access).
			if r.Header.Get("Access-Control-Request-Private-Network") == "true" {
				h.Set("Access-Control-Allow-Private-Network", "true")
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		next.ServeHTTP(w, r)
	})
}
