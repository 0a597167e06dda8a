package fakeapi

import (
	"net/http"
	"sync"
)

// Quota is a quota of the Gemini API that a model's requests run into
// (see [Server.ExhaustQuota]). The Server answers them as the API does: HTTP
// 429, status RESOURCE_EXHAUSTED, with a google.rpc.QuotaFailure detail
// naming the quota, a google.rpc.Help detail linking to the rate-limit
// page, and a google.rpc.RetryInfo detail when RetryDelay is set:
//
//	{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "You exceeded your current quota…",
//	  "details": [
//	    {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{
//	      "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
//	      "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
//	      "quotaDimensions": {"location": "global", "model": "gemini-2.5-pro"}, "quotaValue": "50"}]},
//	    {"@type": "type.googleapis.com/google.rpc.Help", "links": [{"description": "Learn more about Gemini API quotas",
//	      "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]},
//	    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "43s"}]}}
//
// The violation's fields are google.rpc.QuotaFailure.Violation's
// (googleapis' google/rpc/error_details.proto); the quotaId's words for
// the period (PerDay, PerMinute) are the API's practice, not documented.
type Quota struct {
	// Daily makes the violated quota a per-day one
	// (GenerateRequestsPerDayPerProjectPerModel-FreeTier); otherwise it is
	// per minute (GenerateRequestsPerMinutePerProjectPerModel-FreeTier).
	Daily bool
	// RetryDelay, when not "", is the RetryInfo's retryDelay, a protobuf
	// duration such as "43s" or "0.05s". The API sends one with a daily
	// violation too.
	RetryDelay string
	// Requests is how many requests are refused before the model answers
	// again (a per-minute window that passes); 0 refuses all.
	Requests int
	// After is how many requests are answered before the quota runs out
	// (one that runs out in the middle of a turn).
	After int
}

// QuotaMessage is the message of a quota's 429, as the Gemini API words it.
const QuotaMessage = "You exceeded your current quota, please check your plan and billing details. For more " +
	"information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."

// quotaStore is the quotas of [Server.ExhaustQuota], by model.
type quotaStore struct {
	mu      sync.Mutex
	byModel map[string]*quotaState
}

type quotaState struct {
	q       Quota
	seen    int // requests, answered or refused
	refused int
}

// ExhaustQuota makes the generateContent and streamGenerateContent
// requests for model (its name without "models/"), and the creates of its
// interactions, run into q; the zero
// Quota with Daily false and no RetryDelay is a per-minute quota refusing
// every request. ExhaustQuota(model, nil) lifts it.
func (s *Server) ExhaustQuota(model string, q *Quota) {
	s.quotas.mu.Lock()
	defer s.quotas.mu.Unlock()
	if s.quotas.byModel == nil {
		s.quotas.byModel = map[string]*quotaState{}
	}
	if q == nil {
		delete(s.quotas.byModel, model)
		return
	}
	s.quotas.byModel[model] = &quotaState{q: *q}
}

// refuseQuota answers rec with its model's quota error, if it has one
// that still refuses.
func (s *Server) refuseQuota(w http.ResponseWriter, rec Request) bool {
	s.quotas.mu.Lock()
	st := s.quotas.byModel[rec.Model]
	if st != nil {
		st.seen++
	}
	refuse := st != nil && st.seen > st.q.After && (st.q.Requests == 0 || st.refused < st.q.Requests)
	var q Quota
	if refuse {
		st.refused++
		q = st.q
	}
	s.quotas.mu.Unlock()
	if !refuse {
		return false
	}
	id, metric := "GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "generativelanguage.googleapis.com/generate_content_free_tier_requests"
	value := "10"
	if q.Daily {
		id, value = "GenerateRequestsPerDayPerProjectPerModel-FreeTier", "250"
	}
	details := []any{
		map[string]any{
			"@type": "type.googleapis.com/google.rpc.QuotaFailure",
			"violations": []any{map[string]any{
				"quotaMetric":     metric,
				"quotaId":         id,
				"quotaDimensions": map[string]any{"location": "global", "model": rec.Model},
				"quotaValue":      value,
			}},
		},
		map[string]any{
			"@type": "type.googleapis.com/google.rpc.Help",
			"links": []any{map[string]any{
				"description": "Learn more about Gemini API quotas",
				"url":         "https://ai.google.dev/gemini-api/docs/rate-limits",
			}},
		},
	}
	if q.RetryDelay != "" {
		details = append(details, map[string]any{
			"@type":      "type.googleapis.com/google.rpc.RetryInfo",
			"retryDelay": q.RetryDelay,
		})
	}
	s.failWith(w, rec, http.StatusTooManyRequests, QuotaMessage, details)
	return true
}
