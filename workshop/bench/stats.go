package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// series is one measurement repeated: one value per round (or per call,
// for latency percentiles). Durations are stored as seconds.
type series []float64

func durations(ds []time.Duration) series {
	s := make(series, len(ds))
	for i, d := range ds {
		s[i] = d.Seconds()
	}
	return s
}

func (s series) sorted() series {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// median is the middle value, or the mean of the two middle ones; NaN for
// an empty series.
func (s series) median() float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	c := s.sorted()
	n := len(c)
	if n%2 == 1 {
		return c[n/2]
	}
	return (c[n/2-1] + c[n/2]) / 2
}

func (s series) min() float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	return slices.Min(s)
}

func (s series) max() float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	return slices.Max(s)
}

// percentile is the nearest-rank percentile p (0 < p <= 100).
func (s series) percentile(p float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	c := s.sorted()
	rank := int(math.Ceil(p / 100 * float64(len(c))))
	rank = max(1, min(rank, len(c)))
	return c[rank-1]
}

// minus returns the paired differences s[i]-o[i]: both series come from the
// same rounds, so each difference is taken under the same machine state.
func (s series) minus(o series) series {
	n := min(len(s), len(o))
	d := make(series, n)
	for i := range n {
		d[i] = s[i] - o[i]
	}
	return d
}

// fmtDur formats seconds with a precision that suits the magnitude.
func fmtDur(sec float64) string {
	switch a := math.Abs(sec); {
	case math.IsNaN(sec):
		return "–"
	case a >= 1:
		return fmt.Sprintf("%.3f s", sec)
	case a >= 0.1:
		return fmt.Sprintf("%.0f ms", sec*1e3)
	case a >= 0.01:
		return fmt.Sprintf("%.1f ms", sec*1e3)
	case a >= 0.001:
		return fmt.Sprintf("%.2f ms", sec*1e3)
	default:
		return fmt.Sprintf("%.0f µs", sec*1e6)
	}
}

// fmtSignedDur is fmtDur with an explicit sign, for differences.
func fmtSignedDur(sec float64) string {
	if sec >= 0 {
		return "+" + fmtDur(sec)
	}
	return "−" + fmtDur(-sec)
}

// fmtRange formats min–max with f.
func fmtRange(s series, f func(float64) string) string {
	if len(s) == 0 {
		return "–"
	}
	return f(s.min()) + " – " + f(s.max())
}

// fmtRatio formats v/ours as "×1.23".
func fmtRatio(v, ours float64) string {
	if ours == 0 || math.IsNaN(v) || math.IsNaN(ours) {
		return "–"
	}
	r := v / ours
	switch {
	case r >= 100:
		return fmt.Sprintf("×%.0f", r)
	case r >= 10:
		return fmt.Sprintf("×%.1f", r)
	default:
		return fmt.Sprintf("×%.2f", r)
	}
}

// fmtMB formats bytes in MB (10^6 bytes), the unit the targets use.
func fmtMB(bytes float64) string {
	if math.IsNaN(bytes) {
		return "–"
	}
	return fmt.Sprintf("%.1f MB", bytes/1e6)
}

func fmtSignedMB(bytes float64) string {
	if bytes >= 0 {
		return "+" + fmtMB(bytes)
	}
	return "−" + fmtMB(-bytes)
}
