package target

import (
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// TestConfigYAMLKeys checks the suite file's keys decode into the config
// structs.
func TestConfigYAMLKeys(t *testing.T) {
	var h HTTPConfig
	src := `
url: http://127.0.0.1:8080/answer
method: PUT
headers: {Authorization: "Bearer t"}
body: '{"q": {{ json .Input }}}'
output: answer.text
max_response_bytes: 2048
`
	if err := yaml.Unmarshal([]byte(src), &h); err != nil {
		t.Fatal(err)
	}
	if h.URL != "http://127.0.0.1:8080/answer" || h.Method != "PUT" || h.Headers["Authorization"] != "Bearer t" ||
		h.Body != `{"q": {{ json .Input }}}` || h.Output != "answer.text" || h.MaxResponseBytes != 2048 {
		t.Errorf("HTTPConfig = %+v", h)
	}
	if err := h.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}

	var x ExecConfig
	if err := yaml.Unmarshal([]byte("command: [python3, bot.py]\nenv: {A: b}\ndir: /tmp\nmax_output_bytes: 10\n"), &x); err != nil {
		t.Fatal(err)
	}
	if len(x.Command) != 2 || x.Env["A"] != "b" || x.Dir != "/tmp" || x.MaxOutputBytes != 10 {
		t.Errorf("ExecConfig = %+v", x)
	}

	var l Limits
	if err := yaml.Unmarshal([]byte("rate_limit: 600/m\nburst: 3\ntokens_per_minute: 90000\n"), &l); err != nil {
		t.Fatal(err)
	}
	if l.Requests != (Rate{600, time.Minute}) || l.Burst != 3 || l.TokensPerMinute != 90000 {
		t.Errorf("Limits = %+v", l)
	}
	if err := yaml.Unmarshal([]byte("rate_limit: fast\n"), &l); err == nil {
		t.Errorf("bad rate accepted")
	}
}
