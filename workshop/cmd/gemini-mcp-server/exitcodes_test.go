package main

import (
	"strings"
	"testing"
)

// TestCLIExitCodesAsTheyMean: a chat whose CLI fails with exit 255 (an
// error's own code, no HTTP status in its output) is reported as that
// exit, by the one-shot and the warm backend alike, never as an invented
// "Gemini API error 511"; an exit that is an API status modulo 256 (173,
// 429) still names the status.
func TestCLIExitCodesAsTheyMean(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"oneshot", "warm"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.vars = append(e.vars, "GEMINI_MCP_BACKEND="+backend)
			cs := connect(t, e.command())
			res, err := callTool(cs, "chat", map[string]any{"prompt": "fail [[exit:255]]"})
			if err != nil || !res.IsError {
				t.Fatalf("chat exiting 255: %v %+v", err, res)
			}
			text := resultText(res)
			for _, bad := range []string{"511", "Network Authentication", "Gemini API error"} {
				if strings.Contains(text, bad) {
					t.Errorf("the failure of a CLI exiting 255 says %q: %s", bad, text)
				}
			}
			want := "exited with code 255"
			if backend == "warm" {
				// No process exits: the warm CLI answers the prompt with an error.
				want = "gemini --acp failed"
			}
			if !strings.Contains(text, want) || !strings.Contains(text, "fake failure with exit 255") {
				t.Errorf("the failure of a CLI exiting 255 lacks %q and the CLI's message: %s", want, text)
			}
			res, err = callTool(cs, "chat", map[string]any{"prompt": "fail [[exit:173]]"})
			if err != nil || !res.IsError || !strings.Contains(resultText(res), "Gemini API error 429 Too Many Requests") {
				t.Fatalf("chat exiting 173: %v %s", err, resultText(res))
			}
		})
	}
}
