// Package metrics counts what the server does and writes it in the
// Prometheus text exposition format (version 0.0.4): counters, gauges and
// histograms with a fixed set of labels each, written sorted so that two
// scrapes of the same state read the same. It is small on purpose: the
// server links no metrics library.
//
// The hot paths (Add, Inc, Set, Observe on a series already seen) take a
// read lock on their family's map and otherwise use atomics; a series'
// first use takes the write lock once.
package metrics

import (
	"bufio"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// maxLabels is the most labels a family may have; keys are fixed-size
// arrays so that finding a series allocates nothing.
const maxLabels = 4

type key [maxLabels]string

// Registry holds metric families and writes them.
type Registry struct {
	mu       sync.Mutex
	families map[string]writer
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{families: map[string]writer{}} }

type writer interface {
	write(w *bufio.Writer)
}

func (r *Registry) add(name string, f writer) {
	if !validName(name) {
		panic("metrics: invalid metric name " + strconv.Quote(name))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.families[name]; dup {
		panic("metrics: duplicate metric " + name)
	}
	r.families[name] = f
}

// WriteTo writes every family in the text format, by name.
func (r *Registry) WriteTo(out io.Writer) (int64, error) {
	r.mu.Lock()
	names := make([]string, 0, len(r.families))
	for n := range r.families {
		names = append(names, n)
	}
	fams := make([]writer, 0, len(names))
	slices.Sort(names)
	for _, n := range names {
		fams = append(fams, r.families[n])
	}
	r.mu.Unlock()
	cw := &countingWriter{w: out}
	w := bufio.NewWriter(cw)
	for _, f := range fams {
		f.write(w)
	}
	err := w.Flush()
	return cw.n, err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// family is what every kind shares: a name, help, label names and the
// series by label values.
type family[S any] struct {
	name, help, kind string
	labels           []string
	mu               sync.RWMutex
	series           map[key]*S
	newS             func() *S
}

func newFamily[S any](name, help, kind string, labels []string, newS func() *S) *family[S] {
	if len(labels) > maxLabels {
		panic("metrics: too many labels for " + name)
	}
	for _, l := range labels {
		if !validLabel(l) {
			panic("metrics: invalid label name " + strconv.Quote(l) + " for " + name)
		}
	}
	return &family[S]{name: name, help: help, kind: kind, labels: labels, series: map[key]*S{}, newS: newS}
}

// get returns the series of values, making it on first use.
func (f *family[S]) get(values []string) *S {
	if len(values) != len(f.labels) {
		panic("metrics: " + f.name + " takes " + strconv.Itoa(len(f.labels)) + " label values")
	}
	var k key
	copy(k[:], values)
	f.mu.RLock()
	s, ok := f.series[k]
	f.mu.RUnlock()
	if ok {
		return s
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok = f.series[k]; !ok {
		s = f.newS()
		f.series[k] = s
	}
	return s
}

// sorted returns the series' keys in order, and the series.
func (f *family[S]) sorted() ([]key, []*S) {
	f.mu.RLock()
	keys := make([]key, 0, len(f.series))
	for k := range f.series {
		keys = append(keys, k)
	}
	f.mu.RUnlock()
	slices.SortFunc(keys, func(a, b key) int { return slices.Compare(a[:], b[:]) })
	f.mu.RLock()
	defer f.mu.RUnlock()
	ss := make([]*S, len(keys))
	for i, k := range keys {
		ss[i] = f.series[k]
	}
	return keys, ss
}

func (f *family[S]) header(w *bufio.Writer) {
	w.WriteString("# HELP ")
	w.WriteString(f.name)
	w.WriteByte(' ')
	w.WriteString(escapeHelp(f.help))
	w.WriteString("\n# TYPE ")
	w.WriteString(f.name)
	w.WriteByte(' ')
	w.WriteString(f.kind)
	w.WriteByte('\n')
}

// sample writes one line: name{labels[,extra="v"]} value.
func (f *family[S]) sample(w *bufio.Writer, suffix string, k key, extraName, extraValue string, v string) {
	w.WriteString(f.name)
	w.WriteString(suffix)
	if len(f.labels) > 0 || extraName != "" {
		w.WriteByte('{')
		for i, l := range f.labels {
			if i > 0 {
				w.WriteByte(',')
			}
			writeLabel(w, l, k[i])
		}
		if extraName != "" {
			if len(f.labels) > 0 {
				w.WriteByte(',')
			}
			writeLabel(w, extraName, extraValue)
		}
		w.WriteByte('}')
	}
	w.WriteByte(' ')
	w.WriteString(v)
	w.WriteByte('\n')
}

func writeLabel(w *bufio.Writer, name, value string) {
	w.WriteString(name)
	w.WriteString(`="`)
	w.WriteString(escapeLabel(value))
	w.WriteByte('"')
}

// escapeLabel escapes a label value as the format requires: backslash,
// double quote and line feed.
func escapeLabel(s string) string {
	if !strings.ContainsAny(s, "\\\"\n") {
		return s
	}
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// escapeHelp escapes help text: backslash and line feed.
func escapeHelp(s string) string {
	if !strings.ContainsAny(s, "\\\n") {
		return s
	}
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

// formatFloat writes a sample value as the format reads it.
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func validLabel(s string) bool {
	return validName(s) && !strings.Contains(s, ":") && !strings.HasPrefix(s, "__") && s != "le"
}

// CounterVec is a family of counters (integer, only going up).
type CounterVec struct{ f *family[atomic.Uint64] }

// NewCounter adds a counter family; its name should end in _total.
func (r *Registry) NewCounter(name, help string, labels ...string) *CounterVec {
	c := &CounterVec{newFamily(name, help, "counter", labels, func() *atomic.Uint64 { return new(atomic.Uint64) })}
	r.add(name, c)
	return c
}

// Add adds n to the series of values.
func (c *CounterVec) Add(n uint64, values ...string) { c.f.get(values).Add(n) }

// Inc adds one.
func (c *CounterVec) Inc(values ...string) { c.f.get(values).Add(1) }

// Value reads a series (0 if never used).
func (c *CounterVec) Value(values ...string) uint64 { return c.f.get(values).Load() }

func (c *CounterVec) write(w *bufio.Writer) {
	c.f.header(w)
	keys, ss := c.f.sorted()
	for i, k := range keys {
		c.f.sample(w, "", k, "", "", strconv.FormatUint(ss[i].Load(), 10))
	}
}

// GaugeVec is a family of integer gauges.
type GaugeVec struct{ f *family[atomic.Int64] }

// NewGauge adds a gauge family.
func (r *Registry) NewGauge(name, help string, labels ...string) *GaugeVec {
	g := &GaugeVec{newFamily(name, help, "gauge", labels, func() *atomic.Int64 { return new(atomic.Int64) })}
	r.add(name, g)
	return g
}

// Add adds n (which may be negative).
func (g *GaugeVec) Add(n int64, values ...string) { g.f.get(values).Add(n) }

// Set sets the series.
func (g *GaugeVec) Set(n int64, values ...string) { g.f.get(values).Store(n) }

// Value reads a series.
func (g *GaugeVec) Value(values ...string) int64 { return g.f.get(values).Load() }

func (g *GaugeVec) write(w *bufio.Writer) {
	g.f.header(w)
	keys, ss := g.f.sorted()
	for i, k := range keys {
		g.f.sample(w, "", k, "", "", strconv.FormatInt(ss[i].Load(), 10))
	}
}

// GaugeFunc is a gauge without labels read at scrape time.
type GaugeFunc struct {
	name, help string
	fn         atomic.Pointer[func() float64]
}

// NewGaugeFunc adds a gauge whose value fn gives when scraped (fn may be
// set later with Set; none means 0).
func (r *Registry) NewGaugeFunc(name, help string) *GaugeFunc {
	g := &GaugeFunc{name: name, help: help}
	r.add(name, g)
	return g
}

// Set replaces the function (nil: 0).
func (g *GaugeFunc) Set(fn func() float64) {
	if fn == nil {
		g.fn.Store(nil)
		return
	}
	g.fn.Store(&fn)
}

func (g *GaugeFunc) write(w *bufio.Writer) {
	v := 0.0
	if fn := g.fn.Load(); fn != nil {
		v = (*fn)()
	}
	f := family[struct{}]{name: g.name, help: g.help, kind: "gauge"}
	f.header(w)
	f.sample(w, "", key{}, "", "", formatFloat(v))
}

// HistogramVec is a family of histograms with fixed buckets.
type HistogramVec struct {
	f      *family[histogram]
	bounds []float64
	les    []string
}

type histogram struct {
	counts []atomic.Uint64 // per bucket, not cumulative; the last is +Inf
	sum    atomic.Uint64   // float64 bits
	count  atomic.Uint64
}

// NewHistogram adds a histogram family with the upper bounds given
// (increasing; +Inf is implied).
func (r *Registry) NewHistogram(name, help string, bounds []float64, labels ...string) *HistogramVec {
	if !slices.IsSorted(bounds) || len(bounds) == 0 || math.IsInf(bounds[len(bounds)-1], 1) {
		panic("metrics: bad buckets for " + name)
	}
	h := &HistogramVec{bounds: slices.Clone(bounds)}
	for _, b := range bounds {
		h.les = append(h.les, formatFloat(b))
	}
	h.les = append(h.les, "+Inf")
	n := len(bounds) + 1
	h.f = newFamily(name, help, "histogram", labels, func() *histogram { return &histogram{counts: make([]atomic.Uint64, n)} })
	r.add(name, h)
	return h
}

// Observe records v in the series of values.
func (h *HistogramVec) Observe(v float64, values ...string) {
	s := h.f.get(values)
	i, _ := slices.BinarySearch(h.bounds, v) // the first bound >= v: le is inclusive
	s.counts[i].Add(1)
	for {
		old := s.sum.Load()
		if s.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			break
		}
	}
	s.count.Add(1)
}

// Count reads a series' count of observations.
func (h *HistogramVec) Count(values ...string) uint64 { return h.f.get(values).count.Load() }

// Sum reads a series' sum of observations.
func (h *HistogramVec) Sum(values ...string) float64 {
	return math.Float64frombits(h.f.get(values).sum.Load())
}

func (h *HistogramVec) write(w *bufio.Writer) {
	h.f.header(w)
	keys, ss := h.f.sorted()
	for i, k := range keys {
		s := ss[i]
		// The count is read first and the buckets are made to agree with
		// it, so that a scrape racing an Observe stays consistent
		// (+Inf bucket == count, buckets never decreasing).
		count := s.count.Load()
		sum := math.Float64frombits(s.sum.Load())
		var cum uint64
		for j, le := range h.les {
			cum = min(cum+s.counts[j].Load(), count)
			if j == len(h.les)-1 {
				cum = count
			}
			h.f.sample(w, "_bucket", k, "le", le, strconv.FormatUint(cum, 10))
		}
		h.f.sample(w, "_sum", k, "", "", formatFloat(sum))
		h.f.sample(w, "_count", k, "", "", strconv.FormatUint(count, 10))
	}
}
