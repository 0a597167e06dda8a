package fakeapi

import (
	"errors"
	"testing"

	"google.golang.org/genai"
)

// TestQuotaThroughSDK: a quota's 429 decodes through the SDK into a
// genai.APIError whose details are the API's google.rpc.QuotaFailure,
// Help and RetryInfo, with the violation's fields; a quota with a number
// of requests lifts after them; another model is not refused.
func TestQuotaThroughSDK(t *testing.T) {
	t.Parallel()
	s := New()
	t.Cleanup(s.Close)
	c := sdkClient(t, s)
	s.ExhaustQuota("gemini-2.5-pro", &Quota{Daily: true, RetryDelay: "43s"})
	s.ExhaustQuota("gemini-2.5-flash", &Quota{RetryDelay: "0.05s", Requests: 1})
	hi := []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)}

	_, err := streamParts(t, c, "gemini-2.5-pro", hi, nil)
	var e genai.APIError
	if !errors.As(err, &e) {
		t.Fatalf("a quota's error is no genai.APIError: %v", err)
	}
	if e.Code != 429 || e.Status != "RESOURCE_EXHAUSTED" || e.Message != QuotaMessage || len(e.Details) != 3 {
		t.Fatalf("the quota's error: %+v", e)
	}
	var quotaID, delay, help string
	for _, d := range e.Details {
		switch d["@type"] {
		case "type.googleapis.com/google.rpc.QuotaFailure":
			vs, _ := d["violations"].([]any)
			if len(vs) != 1 {
				t.Fatalf("violations: %v", d)
			}
			v, _ := vs[0].(map[string]any)
			quotaID, _ = v["quotaId"].(string)
			dims, _ := v["quotaDimensions"].(map[string]any)
			if dims["model"] != "gemini-2.5-pro" || v["quotaMetric"] == nil || v["quotaValue"] == nil {
				t.Errorf("the violation: %v", v)
			}
		case "type.googleapis.com/google.rpc.RetryInfo":
			delay, _ = d["retryDelay"].(string)
		case "type.googleapis.com/google.rpc.Help":
			links, _ := d["links"].([]any)
			if len(links) == 1 {
				l, _ := links[0].(map[string]any)
				help, _ = l["url"].(string)
			}
		}
	}
	if quotaID != "GenerateRequestsPerDayPerProjectPerModel-FreeTier" || delay != "43s" || help == "" {
		t.Fatalf("the details: quotaId %q, retryDelay %q, help %q", quotaID, delay, help)
	}
	if _, err := streamParts(t, c, "gemini-2.5-pro", hi, nil); err == nil {
		t.Fatal("a daily quota lifted after one request")
	}

	_, err = streamParts(t, c, "gemini-2.5-flash", hi, nil)
	if !errors.As(err, &e) || e.Code != 429 {
		t.Fatalf("a per-minute quota's first request: %v", err)
	}
	if e.Details[0]["violations"].([]any)[0].(map[string]any)["quotaId"] != "GenerateRequestsPerMinutePerProjectPerModel-FreeTier" {
		t.Fatalf("a per-minute quota's details: %v", e.Details)
	}
	if _, err := streamParts(t, c, "gemini-2.5-flash", hi, nil); err != nil {
		t.Fatalf("a per-minute quota of one request still refuses: %v", err)
	}
	if _, err := streamParts(t, c, "gemini-2.5-flash-lite", hi, nil); err != nil {
		t.Fatalf("a model without a quota refused: %v", err)
	}
	s.ExhaustQuota("gemini-2.5-pro", nil)
	if _, err := streamParts(t, c, "gemini-2.5-pro", hi, nil); err != nil {
		t.Fatalf("a lifted quota still refuses: %v", err)
	}
}
