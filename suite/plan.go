package suite

import (
	"cmp"
	"strings"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/openai"
	"github.com/evalrun/evalrun/scorer"
	"github.com/evalrun/evalrun/target"
)

// ChatPlan describes the requests of an openai target, for estimates made
// without calling anything (evalrun run --dry-run).
type ChatPlan struct {
	// Model is the target's model name.
	Model string
	// MaxTokens is max_tokens (or params.max_completion_tokens); 0 when
	// neither is set.
	MaxTokens int
	// Price is the target's price table; nil when it has none.
	Price *openai.Price
	// MaxSteps is the model turns an agent (a target with tools) may take
	// per item, the default filled in; 0 when the target is not an agent.
	MaxSteps int

	system, prompt *target.Template
}

// Prompt returns the text the target sends for item: its system message
// (when set) and its user message, rendered from the suite's templates,
// or the messages of the item's conversation (see
// [evalrun.Conversation]). An agent's later turns are unknown before the
// run: only the first request counts.
func (c *ChatPlan) Prompt(item *evalrun.Item) (string, error) {
	var parts []string
	conv, isConv := evalrun.Conversation(item.Input)
	for _, t := range []*target.Template{c.system, c.prompt} {
		if t == nil || (isConv && t == c.prompt) {
			continue
		}
		s, err := t.Render(item)
		if err != nil {
			return "", err
		}
		parts = append(parts, s)
	}
	for _, m := range conv {
		parts = append(parts, m.Content)
	}
	return strings.Join(parts, "\n"), nil
}

// newChatPlan returns the plan of a validated openai target config.
func newChatPlan(cfg openai.ChatTargetConfig) *ChatPlan {
	c := &ChatPlan{Model: cfg.Model, MaxTokens: cfg.MaxTokens, Price: cfg.Price}
	if len(cfg.Tools) > 0 {
		c.MaxSteps = cmp.Or(cfg.MaxSteps, openai.DefaultMaxSteps)
	}
	if c.MaxTokens == 0 {
		switch v := cfg.Params["max_completion_tokens"].(type) {
		case int:
			c.MaxTokens = v
		case float64:
			c.MaxTokens = int(v)
		}
	}
	if cfg.System != "" {
		c.system, _ = target.ParseTemplate("system", cfg.System)
	}
	text := cfg.Prompt
	if text == "" {
		text = openai.DefaultPrompt
	}
	c.prompt, _ = target.ParseTemplate("prompt", text)
	return c
}

// ChatPlan returns the plan of the suite's target when it is an openai
// target (kind: openai), nil for every other kind.
func (s *Suite) ChatPlan() *ChatPlan { return s.chatPlan }

// JudgePlan describes the requests of an llm_judge scorer, for estimates
// made without calling anything (evalrun run --dry-run).
type JudgePlan struct {
	// Scorer is the scorer's name and Model the judge model's.
	Scorer, Model string
	// MaxTokens caps a verdict; 0 when unset.
	MaxTokens int
	// Price is the judge's price table; nil when it has none.
	Price *evalrun.Price
	// Calibration is set for the judge of a scorer target (judge
	// calibration), which grades the case each item's input spells out.
	Calibration bool

	judge *scorer.LLMJudge
}

// Prompt returns the text the judge sends for item: its system and user
// messages. The output a scorer grades is unknown before the run: the
// item's expected output stands in for it. Under calibration the case is
// the item's own (see [target.CalibrationInput]).
func (j *JudgePlan) Prompt(item *evalrun.Item) string {
	in := evalrun.ScoreInput{Item: item, Output: item.Expected}
	if j.Calibration {
		in = target.CalibrationInput(item)
	}
	req := j.judge.Request(in)
	parts := make([]string, len(req.Messages))
	for i, m := range req.Messages {
		parts[i] = m.Content
	}
	return strings.Join(parts, "\n")
}

// JudgePlans returns the plans of the suite's llm_judge scorers, in file
// order.
func (s *Suite) JudgePlans() []*JudgePlan { return s.judgePlans }

// ScorerKinds returns the kinds of the suite's scorers, in file order (the
// order of [Suite.ScorerNames]).
func (s *Suite) ScorerKinds() []string { return s.scorerKinds }
