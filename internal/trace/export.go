package trace

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ExporterOptions configure an Exporter. Zero values take the defaults
// named beside them.
type ExporterOptions struct {
	// URL is where batches are POSTed: the traces endpoint itself
	// ({OTEL_EXPORTER_OTLP_ENDPOINT}/v1/traces).
	URL string
	// Headers are sent with every request (OTEL_EXPORTER_OTLP_HEADERS);
	// their values are secrets, never logged.
	Headers map[string]string
	// Timeout bounds one POST (10 s).
	Timeout time.Duration
	// Service and Version name this process in the batches' resource.
	Service, Version string
	// QueueSize bounds the spans waiting for export (2048); a span ended
	// when it is full is dropped and counted. BatchSize is the most spans
	// one POST carries (512), and a full batch is sent at once; Interval
	// is how long an ended span waits at most otherwise (5 s).
	QueueSize, BatchSize int
	Interval             time.Duration
	Log                  *slog.Logger
	// Client sends the requests (a client of its own by default). Its
	// redirects are followed only within the receiver's origin (see
	// sameOrigin), whichever client it is.
	Client *http.Client
}

// Exporter sends ended spans to an OTLP/HTTP receiver in batches, from one
// goroutine, which Close stops. Ending a span never waits for the network.
type Exporter struct {
	o       ExporterOptions
	backoff time.Duration // first wait before a retry (tests shorten it)

	mu      sync.Mutex
	queue   []*Span
	closed  bool
	dropped uint64
	sent    uint64
	failing bool

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
	// ctx is cancelled when Close's deadline passes, ending a POST in
	// flight.
	ctx    context.Context
	cancel context.CancelFunc
}

// maxAttempts bounds the POSTs of one batch (a 429, 502, 503 or 504, or a
// connection error, is retried with backoff).
const maxAttempts = 4

// NewExporter starts an Exporter; Close stops it.
func NewExporter(o ExporterOptions) *Exporter {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 2048
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 512
	}
	o.BatchSize = min(o.BatchSize, o.QueueSize)
	if o.Interval <= 0 {
		o.Interval = 5 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Client == nil {
		o.Client = &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, MaxIdleConns: 2, IdleConnTimeout: 30 * time.Second}}
	}
	c := *o.Client
	c.CheckRedirect = sameOrigin
	o.Client = &c
	e := &Exporter{o: o, backoff: 250 * time.Millisecond, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	go e.run()
	return e
}

// Stats are what an Exporter has done so far.
type Stats struct {
	Sent    uint64 // spans the receiver accepted
	Dropped uint64 // spans dropped: the queue full, the exporter closed, or their batch refused
}

// Stats counts the spans sent and dropped.
func (e *Exporter) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return Stats{Sent: e.sent, Dropped: e.dropped}
}

func (e *Exporter) enqueue(s *Span) {
	e.mu.Lock()
	if e.closed || len(e.queue) >= e.o.QueueSize {
		e.dropped++
		e.mu.Unlock()
		return
	}
	e.queue = append(e.queue, s)
	full := len(e.queue) >= e.o.BatchSize
	e.mu.Unlock()
	if full {
		select {
		case e.kick <- struct{}{}:
		default:
		}
	}
}

// take removes up to a batch of spans from the queue.
func (e *Exporter) take() []*Span {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := min(len(e.queue), e.o.BatchSize)
	if n == 0 {
		return nil
	}
	batch := make([]*Span, n)
	copy(batch, e.queue)
	e.queue = append(e.queue[:0], e.queue[n:]...)
	return batch
}

func (e *Exporter) run() {
	defer close(e.done)
	t := time.NewTicker(e.o.Interval)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			for b := e.take(); b != nil; b = e.take() {
				e.send(b)
			}
			return
		case <-t.C:
		case <-e.kick:
		}
		for b := e.take(); b != nil; b = e.take() {
			e.send(b)
		}
	}
}

// Close sends the spans still queued, within ctx's deadline, and stops the
// exporter's goroutine: when ctx ends first, the POST in flight is
// cancelled and the spans left are dropped. Close returns once the
// goroutine has ended. Spans ended after Close are dropped.
func (e *Exporter) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		<-e.done
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	close(e.stop)
	stop := context.AfterFunc(ctx, e.cancel)
	defer stop()
	<-e.done
	e.cancel()
	e.mu.Lock()
	left := len(e.queue)
	e.dropped += uint64(left)
	e.queue = nil
	e.mu.Unlock()
	if ctx.Err() != nil {
		return fmt.Errorf("trace export: flushing at shutdown: %w", ctx.Err())
	}
	return nil
}

// send POSTs one batch, retrying what the OTLP/HTTP spec calls retryable
// (429, 502, 503, 504, or no answer) a few times with growing waits (a
// Retry-After of the receiver's, when longer and not past the exporter's
// patience, instead).
func (e *Exporter) send(batch []*Span) {
	body, err := json.Marshal(e.request(batch))
	if err != nil { // cannot happen: plain strings and numbers
		e.drop(batch, err)
		return
	}
	wait := e.backoff
	for attempt := 1; ; attempt++ {
		retry, err := e.post(body)
		if err == nil {
			e.mu.Lock()
			e.sent += uint64(len(batch))
			if e.failing {
				e.failing = false
				e.o.Log.Info("trace export: the receiver accepts spans again", "url", e.o.URL)
			}
			e.mu.Unlock()
			return
		}
		if retry < 0 || attempt == maxAttempts || e.ctx.Err() != nil {
			e.drop(batch, err)
			return
		}
		wait = max(wait, min(retry, 8*e.backoff))
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-e.ctx.Done():
			t.Stop()
			e.drop(batch, err)
			return
		}
		wait *= 2
	}
}

func (e *Exporter) drop(batch []*Span, err error) {
	e.mu.Lock()
	e.dropped += uint64(len(batch))
	first := !e.failing
	e.failing = true
	dropped := e.dropped
	e.mu.Unlock()
	if first {
		e.o.Log.Warn("trace export failed; spans are dropped until the receiver accepts them", "url", e.o.URL, "spans", len(batch), "droppedSoFar", dropped, "err", err)
	}
}

// maxRedirects bounds the redirects one POST follows, within its origin.
const maxRedirects = 3

// sameOrigin follows a redirect only to the origin (scheme, host and
// port) of the request it answers: the request carries the
// OTEL_EXPORTER_OTLP_HEADERS, secrets meant for the receiver named, which
// another host (another port of the same one, or plain http instead of
// https) must not get. Such a redirect is not followed; post reports it.
func sameOrigin(req *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects {
		return fmt.Errorf("more than %d redirects", maxRedirects)
	}
	if origin(req.URL) != origin(via[0].URL) {
		return http.ErrUseLastResponse
	}
	return nil
}

// origin is u's scheme, host and port, the port explicit.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")), port)
}

// maxErrBody caps what is read of a receiver's answer.
const maxErrBody = 4 << 10

// post sends body once. retry is how long the receiver asked to wait (0:
// no preference) when the failure is retryable, -1 when it is not.
func (e *Exporter) post(body []byte) (retry time.Duration, err error) {
	ctx, cancel := context.WithTimeout(e.ctx, e.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.o.URL, bytes.NewReader(body))
	if err != nil {
		return -1, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "gemini-mcp-server/"+e.o.Version)
	for k, v := range e.o.Headers {
		req.Header.Set(k, v)
	}
	resp, err := e.o.Client.Do(req)
	if err != nil {
		// The error names the URL, never the headers.
		return 0, err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrBody))
	if resp.StatusCode/100 == 2 {
		return 0, nil
	}
	if resp.StatusCode/100 == 3 {
		// Only a redirect to another origin ends here (sameOrigin).
		where := "another origin"
		if loc, err := resp.Location(); err == nil {
			where = origin(loc)
		}
		return -1, fmt.Errorf("the receiver answered %s, a redirect to %s, which is not followed: the requests carry OTEL_EXPORTER_OTLP_HEADERS, "+
			"meant for %s only; set the endpoint to where the spans are to go", resp.Status, where, origin(req.URL))
	}
	err = fmt.Errorf("the receiver answered %s: %.200q", resp.Status, msg)
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s > 0 {
			return time.Duration(s) * time.Second, err
		}
		return 0, err
	}
	return -1, err
}
