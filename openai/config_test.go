package openai

import (
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestChatTargetConfigYAMLKeys checks the suite file's keys decode into
// ChatTargetConfig, the connection keys inline.
func TestChatTargetConfigYAMLKeys(t *testing.T) {
	src := `
base_url: http://127.0.0.1:11434/v1
api_key_env: MY_KEY
model: llama3
system: Be brief.
prompt: "Q: {{ .Input }}"
temperature: 0
max_tokens: 256
seed: 42
params: {top_p: 0.9}
price: {input_per_mtok: 0.15, output_per_mtok: 0.6}
max_response_bytes: 4096
`
	var c ChatTargetConfig
	if err := yaml.Unmarshal([]byte(src), &c); err != nil {
		t.Fatal(err)
	}
	if c.BaseURL != "http://127.0.0.1:11434/v1" || c.APIKeyEnv != "MY_KEY" || c.Model != "llama3" || c.System != "Be brief." ||
		c.Prompt != "Q: {{ .Input }}" || c.Temperature == nil || *c.Temperature != 0 || c.MaxTokens != 256 ||
		c.Seed == nil || *c.Seed != 42 || c.Params["top_p"] != 0.9 || c.Price == nil || c.Price.OutputPerMTok != 0.6 || c.MaxResponseBytes != 4096 {
		t.Errorf("ChatTargetConfig = %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}
