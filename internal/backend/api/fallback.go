package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/api/interact"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/metrics"
)

// A 429 RESOURCE_EXHAUSTED of the Gemini API says which quota ran out in a
// google.rpc.QuotaFailure detail, and when to ask again in a
// google.rpc.RetryInfo one, e.g.
//
//	{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "You exceeded your current quota…",
//	  "details": [
//	    {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{
//	      "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
//	      "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
//	      "quotaDimensions": {"location": "global", "model": "gemini-2.5-pro"}, "quotaValue": "50"}]},
//	    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "43s"}]}}
//
// The fields of a violation are google.rpc.QuotaFailure.Violation's
// (googleapis' error_details.proto); that quotaId names the quota's
// period ("PerDay", "PerMinute") is the Gemini API's practice, not a
// documented contract. So a violation is read as daily only when its
// quotaId or quotaMetric says so, and anything else (no details, other
// names) is treated as a limit that may reset: waited for and retried as
// the RetryInfo asks, as before.

// dailyQuota says whether e is a 429 that names a per-day quota among its
// violations: one that will not reset within a call, whatever its
// RetryInfo says (the API sends one with daily violations too).
func dailyQuota(e genai.APIError) bool {
	if e.Code != 429 {
		return false
	}
	for _, d := range e.Details {
		if t, _ := d["@type"].(string); !strings.HasSuffix(t, "google.rpc.QuotaFailure") {
			continue
		}
		vs, _ := d["violations"].([]any)
		for _, v := range vs {
			m, _ := v.(map[string]any)
			for _, k := range []string{"quotaId", "quotaMetric"} {
				s, _ := m[k].(string)
				if s = strings.ToLower(s); strings.Contains(s, "perday") || strings.Contains(s, "per_day") ||
					strings.Contains(s, "daily") {
					return true
				}
			}
		}
	}
	return false
}

// exhaustedQuota marks the error of a request whose model's quota will not
// reset within the call: a daily quota, or a RetryInfo delay longer than
// the call can wait. Such a turn may go to Options.FallbackModel.
type exhaustedQuota struct{ api genai.APIError }

func (q *exhaustedQuota) Error() string { return q.api.Error() }
func (q *exhaustedQuota) Unwrap() error { return q.api }

// markExhausted marks be, the error of e, as an exhausted quota.
func markExhausted(be *backend.Error, e genai.APIError) *backend.Error {
	if be.Kind != backend.KindAPI || be.Status != 429 {
		return be
	}
	c := *be
	c.Err = &exhaustedQuota{api: e}
	return &c
}

// unmarkExhausted drops the mark of markExhausted: the turn cannot go to
// another model (Gemini's tool calls have run on the asked one).
func unmarkExhausted(err error) error {
	var be *backend.Error
	var q *exhaustedQuota
	if !errors.As(err, &be) || !errors.As(be.Err, &q) {
		return err
	}
	c := *be
	c.Err = q.api
	return &c
}

// isExhausted says whether err is marked by markExhausted.
func isExhausted(err error) bool {
	var q *exhaustedQuota
	return errors.As(err, &q)
}

// fallback runs the turn again on Options.FallbackModel after the asked
// model's quota was exhausted (asked is that model, failed its error). It
// returns what converseCached does, and the fallback model's name. Its
// error names both models.
func (b *Backend) fallback(parent, ctx context.Context, id string, t backend.Turn, asked string, failed error, contents []*genai.Content,
	ctxParts int, cfg *genai.GenerateContentConfig, obs backend.Observer) (*streamResult, []*genai.Content, []string, string, error) {
	fail := func(err error) error {
		var be *backend.Error
		if !errors.As(err, &be) {
			be = b.classify(parent, ctx, err, b.fallbackModel)
		}
		if be.Kind == backend.KindCancelled || be.Kind == backend.KindTimeout {
			return be
		}
		c := *be
		c.Reason = fmt.Sprintf("model %s: %s; the fallback model %s (--fallback-model) was tried and failed too: %s",
			asked, strings.TrimSuffix(failed.Error(), "."), b.fallbackModel, be.Reason)
		return &c
	}
	model, err := b.resolveAlias(parent, ctx, b.fallbackModel)
	if err != nil {
		return nil, nil, nil, "", fail(err)
	}
	if model == asked {
		return nil, nil, nil, "", unmarkExhausted(failed)
	}
	mi, found, known, err := b.models.lookup(ctx, model)
	if err != nil {
		known = false
	}
	if known && !found {
		return nil, nil, nil, "", fail(b.unknownModel(model))
	}
	c := *cfg
	c.ThinkingConfig = nil
	notes, err := thinking(t, model, mi, known, &c)
	if err != nil {
		return nil, nil, nil, "", fail(err)
	}
	if known && mi.inputLimit > 0 {
		if err := b.checkFits(parent, ctx, model, mi.inputLimit, c.SystemInstruction, contents); err != nil {
			return nil, nil, nil, "", fail(err)
		}
	}
	b.log.Warn("gemini api: the model's quota is exhausted; asking the fallback model", "model", asked, "fallback", model,
		"err", b.maskKey(failed.Error()))
	obs.Activity(fmt.Sprintf("the quota of %s is exhausted; asking %s (--fallback-model)", asked, model))
	metrics.ModelFallback(b.models.listed(asked), b.models.listed(model))
	res, exchange, more, err := b.converseCached(parent, ctx, id, t, model, contents, ctxParts, &c, obs)
	if err != nil {
		return nil, nil, nil, "", fail(unmarkExhausted(err))
	}
	return res, exchange, append(notes, more...), model, nil
}

// quotaOnInteraction is the note of a server-side-history turn (not
// background: its model serves generateContent) whose interaction the
// API refused to create with a 429, when a fallback model is set: the
// turn then goes through generateContent, where a per-minute limit is
// waited out and an exhausted quota goes to the fallback model, as for
// any turn. The Interactions API's errors are read without their quota
// details, so that the create's 429 alone cannot tell the two apart.
// An interactions-only model's turn (background) has no such way: the
// fallback model serves generateContent, and answering for a model
// served on the Interactions API alone is not what was asked. "" when
// the turn does not go on.
func (b *Backend) quotaOnInteraction(background bool, model string, err error) string {
	var be *backend.Error
	var ae *interact.APIError
	if background || b.fallbackModel == "" || !errors.As(err, &be) || be.Status != http.StatusTooManyRequests ||
		!errors.As(err, &ae) || ae.Op != "create" {
		return ""
	}
	b.log.Warn("gemini api: the interaction of a server-side history turn was refused for its quota or rate; the turn goes through generateContent",
		"model", model, "err", b.maskKey(err.Error()))
	return "server-side history: the Gemini API refused to create the turn's interaction on " + model +
		" (HTTP 429: its quota or rate limit), so the turn went through generateContent, where --fallback-model applies; " +
		"the next turn resends the conversation"
}

// listed is name when the model list fetched last holds it, else "other":
// the model labels of the fallback metric, bounded by the list (nothing
// is fetched for them).
func (m *models) listed(name string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.byName[name]; ok {
		return name
	}
	return "other"
}

// withoutThinkingNotes drops the notes of how thinking_mode and
// include_thoughts were fitted to a model, when the turn went to another.
func withoutThinkingNotes(notes []string) []string {
	return slices.DeleteFunc(notes, func(s string) bool {
		return strings.HasPrefix(s, "thinking_mode:") || strings.HasPrefix(s, "include_thoughts:")
	})
}
