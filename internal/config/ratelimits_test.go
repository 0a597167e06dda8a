package config

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseRateLimits(t *testing.T) {
	t.Parallel()
	tools := []string{"chat", "chat-reply", "analyze", "thinkdeep", "codereview", "debug", "precommit"}
	for _, tc := range []struct{ in, want string }{
		{"", "map[]"},
		{"chat=10/min, analyze=5/minute", "map[analyze:5/min chat:10/min]"},
		{"debug=1/s,precommit=30/h", "map[debug:1/s precommit:30/h]"},
		{"seed", "map[analyze:5/min chat:10/min codereview:5/min debug:5/min precommit:3/min thinkdeep:3/min]"},
		{"recommended", "map[analyze:5/min chat:10/min codereview:5/min debug:5/min precommit:3/min thinkdeep:3/min]"},
		{"recommended,chat=20/min", "map[analyze:5/min chat:20/min codereview:5/min debug:5/min precommit:3/min thinkdeep:3/min]"},
		{"seed,chat=20/min", "map[analyze:5/min chat:20/min codereview:5/min debug:5/min precommit:3/min thinkdeep:3/min]"},
	} {
		got, err := ParseRateLimits(tc.in, tools)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if s := fmtLimits(got); s != tc.want {
			t.Errorf("%q: %s, want %s", tc.in, s, tc.want)
		}
	}
	for _, tc := range []struct{ in, says string }{
		{"chat", "is not tool=N/period"},
		{"chats=1/min", "there is no tool \"chats\""},
		{"chat=0/min", "at least 1"},
		{"chat=5", "is not N/period"},
		{"chat=5/day", "must be s, min or h"},
	} {
		_, err := ParseRateLimits(tc.in, tools)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%q: error %v, want one saying %q", tc.in, err, tc.says)
		}
	}
}

func fmtLimits(m map[string]Rate) string {
	s := map[string]string{}
	for k, v := range m {
		s[k] = v.String()
	}
	b, _ := json.Marshal(s)
	return strings.NewReplacer(`"`, "", "{", "map[", "}", "]", ",", " ").Replace(string(b))
}
