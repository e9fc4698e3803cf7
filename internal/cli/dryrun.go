package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"
	tokencodec "github.com/tiktoken-go/tokenizer/codec"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/dataset"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/report"
	"github.com/evalrun/evalrun/suite"
)

// dryRun is evalrun run --dry-run: it validates the suite (flags applied)
// and the dataset file, which it reads without importing, then prints the
// selected item count, the requests a run would make and an estimated
// cost. It calls no target or model and writes nothing to the store; the
// store is read only when the dataset comes from it (no file, or a pinned
// version). An invalid suite or dataset is exit 2.
func (st *State) dryRun(cmd *cobra.Command, path string, f *runFlags) error {
	if f.resume != "" {
		return invalidf("--dry-run cannot be used with --resume: a dry run checks a suite file")
	}
	if f.limit < 0 {
		return invalidf("--limit %d: must not be negative", f.limit)
	}
	s, err := suite.Load(path, suite.Options{Env: st.lookupEnv(), Deps: modelDeps()})
	if err != nil {
		return err
	}
	defer s.Close()
	st.scrubOutput(s)
	o := f.overrides(cmd)
	if err := f.exec.apply(cmd, &o); err != nil {
		return err
	}
	if err := s.Apply(o); err != nil {
		return err
	}
	if err := checkVariantFlags(s, f); err != nil {
		return err
	}
	if f.distributed { // what run --distributed refuses
		if err := s.CheckStorable(); err != nil {
			return err
		}
	}
	for _, src := range f.failOn {
		c, err := report.ParseCondition(src)
		if err == nil {
			err = c.Check(s.ScorerNames())
		}
		if err != nil {
			return fmt.Errorf("--fail-on: %w", err)
		}
	}
	if _, _, err := reportTargets(f.format, f.outFiles); err != nil {
		return err
	}
	outputs, err := absPath(f.outputs)
	if err != nil {
		return err
	}
	if outputs != "" {
		if _, err := readOutputs(outputs); err != nil {
			return err
		}
	}
	sel := suite.Selection{Tags: f.tags, Limit: f.limit, Outputs: outputs}

	// The dataset file is read and validated, never imported; its items
	// are the run's unless a version is pinned, which the store has.
	var items []*evalrun.Item
	var source string
	version := s.Dataset.Version
	if f.datasetVersion != 0 {
		version = f.datasetVersion
	}
	var all []*evalrun.Item
	if s.Dataset.File != "" {
		if all, err = dataset.ReadFile(s.Dataset.File); err != nil {
			return err
		}
	}
	if s.Dataset.File != "" && version == 0 {
		if items, err = filterItems(all, sel, s.Dataset.Name+" (file "+displayPath(s.Dataset.File)+")"); err != nil {
			return err
		}
		source = fmt.Sprintf("dataset %s: %s is valid, %d items (not imported: a run imports it)", s.Dataset.Name,
			displayPath(s.Dataset.File), len(all))
	} else {
		if err := st.withStore(cmd, func(ctx context.Context, store evalrun.Store) error {
			if version == 0 {
				d, err := store.GetDataset(ctx, s.Dataset.Name)
				if err != nil {
					return notFound(err, "dataset "+s.Dataset.Name,
						"import it with: evalrun dataset import "+s.Dataset.Name+" FILE, or set dataset.file in the suite")
				}
				version = d.LatestVersion
			}
			var err error
			if items, err = selectItems(ctx, store, s.Dataset.Name, version, sel); err != nil {
				return err
			}
			source = fmt.Sprintf("dataset %s: version %d from storage", s.Dataset.Name, version)
			if s.Dataset.File != "" {
				source += fmt.Sprintf(" (the file %s is valid, %d items; a run imports it first)", displayPath(s.Dataset.File), len(all))
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if err := engine.CheckExecutions(len(items), s.Execution.Repeat); err != nil {
		return fmt.Errorf("%w: %w", evalrun.ErrInvalid, err)
	}
	if s.Variants() != nil {
		return writeVariantsPlan(st.Stdout, s, f.variants, items, source)
	}
	plan := newDryRunPlan(s, items, sel.Outputs != "")
	plan.write(st.Stdout, s, source)
	return nil
}

// writeVariantsPlan prints the dry run of an experiment: each selected
// variant's plan (its target, requests, tokens and cost), then the totals.
func writeVariantsPlan(w io.Writer, s *suite.Suite, want []string, items []*evalrun.Item, source string) error {
	names, err := selectVariants(s, want)
	if err != nil {
		return err
	}
	writeDryRunHeader(w, s, source)
	fmt.Fprintf(w, "experiment: %d %s (%s), each a run over the same items; baseline: %s\n",
		len(names), plural(len(names), "variant"), strings.Join(names, ", "), names[0])
	executions, target, judge := 0, 0, 0
	var cost float64
	var unpriced []string
	for _, n := range names {
		view, err := s.ForVariant(n)
		if err != nil {
			return err
		}
		plan := newDryRunPlan(view, items, false)
		var body strings.Builder
		plan.writeBody(&body, view)
		fmt.Fprintf(w, "variant %s:\n", n)
		for _, line := range strings.SplitAfter(strings.TrimSuffix(body.String(), "\n"), "\n") {
			fmt.Fprintf(w, "  %s", line)
		}
		fmt.Fprintln(w)
		executions += plan.executions
		target += plan.targetRequests
		judge += plan.judgeRequests
		usd, known := plan.estimatedCost()
		cost += usd
		if !known {
			unpriced = append(unpriced, n)
		}
	}
	costText := report.FormatUSD(cost)
	switch {
	case len(unpriced) == len(names):
		costText = "unknown (see each variant)"
	case len(unpriced) > 0:
		costText = fmt.Sprintf("at least %s (%s: not fully priced, see above)", costText, strings.Join(unpriced, ", "))
	}
	fmt.Fprintf(w, "total: %d executions; requests: %d target + %d llm_judge = %d, before retries; estimated cost: %s\n",
		executions, target, judge, target+judge, costText)
	return nil
}

// estimatedCost returns the plan's estimated cost in USD (target and
// judges; at most, where max_tokens bounds the output) and whether it is
// known whole: false when a part has no price or an unknown output.
func (p *dryRunPlan) estimatedCost() (float64, bool) {
	usd, known := 0.0, true
	switch {
	case p.outputs:
	case p.chat == nil || p.chat.Price == nil:
		known = p.targetRequests == 0
	default:
		usd += p.chat.Price.Cost(p.inputTokens, p.outputTokens)
		known = p.unknownOutput == 0
	}
	for _, e := range p.judgeEstimates {
		if e.plan.Price == nil || e.plan.MaxTokens == 0 {
			known = false
			if e.plan.Price != nil {
				usd += e.plan.Price.Cost(e.inputTokens, 0)
			}
			continue
		}
		usd += e.plan.Price.Cost(e.inputTokens, e.outputTokens)
	}
	return usd, known && p.embedders == 0
}

// filterItems keeps the items of a selection (tags, then limit), like
// selectItems does for a stored version. what names the dataset in errors.
func filterItems(all []*evalrun.Item, sel suite.Selection, what string) ([]*evalrun.Item, error) {
	var items []*evalrun.Item
	for _, it := range all {
		if len(sel.Tags) > 0 && !slices.ContainsFunc(it.Tags(), func(t string) bool { return slices.Contains(sel.Tags, t) }) {
			continue
		}
		if sel.Limit == 0 || len(items) < sel.Limit {
			items = append(items, it)
		}
	}
	if len(items) == 0 {
		if len(sel.Tags) > 0 {
			return nil, invalidf("no item of dataset %s (%d items) has a tag among %s", what, len(all), strings.Join(sel.Tags, ", "))
		}
		return nil, invalidf("dataset %s has no items", what)
	}
	return items, nil
}

// dryRunPlan is what a run of the suite would do.
type dryRunPlan struct {
	items, repeat, executions int
	// targetRequests is 0 when saved outputs are scored.
	targetRequests int
	judges         int // llm_judge scorers
	judgeRequests  int
	embedders      int // embedding_similarity scorers
	// execScorers and httpScorers are the scorers that run a program or
	// call a grading service once per execution.
	execScorers, httpScorers int
	// embedRequests is the most embedding requests: every output, and
	// every distinct expected output, per scorer.
	embedRequests int
	outputs       bool

	// Token and cost estimates of an openai target; chat is nil otherwise.
	chat          *suite.ChatPlan
	encoding      string
	inputTokens   int64
	outputTokens  int64
	fromExpected  int // items whose output estimate is their expected output
	fromMax       int // items whose output estimate is max_tokens
	unknownOutput int // items with neither
	renderErrs    int
	firstRender   string

	// judgeEstimates are the token estimates of the llm_judge scorers.
	judgeEstimates []judgeEstimate
}

// judgeEstimate is what one llm_judge scorer would send: its prompt over
// every execution, the item's expected output standing in for the output
// it grades (unknown before the run).
type judgeEstimate struct {
	plan         *suite.JudgePlan
	encoding     string
	inputTokens  int64
	outputTokens int64 // from max_tokens; 0 when unset (unknown)
	noExpected   int   // items without an expected output: graded as empty
}

// newDryRunPlan counts the requests and estimates the tokens of a run of
// items.
func newDryRunPlan(s *suite.Suite, items []*evalrun.Item, outputs bool) *dryRunPlan {
	p := &dryRunPlan{items: len(items), repeat: max(s.Execution.Repeat, 1), outputs: outputs}
	p.executions = p.items * p.repeat
	if !outputs {
		p.targetRequests = p.executions
	}
	expected := map[string]bool{}
	for _, it := range items {
		if len(it.Expected) > 0 {
			expected[evalrun.Text(it.Expected)] = true
		}
	}
	for _, k := range s.ScorerKinds() {
		switch k {
		case "llm_judge":
			p.judges++
		case "embedding_similarity":
			p.embedders++
		case "exec":
			p.execScorers++
		case "http":
			p.httpScorers++
		}
	}
	p.judgeRequests = p.executions * p.judges
	p.embedRequests = p.embedders * (p.executions + len(expected))
	for _, j := range s.JudgePlans() {
		p.judgeEstimates = append(p.judgeEstimates, estimateJudge(j, items, p.repeat))
	}
	if p.chat = s.ChatPlan(); p.chat != nil && !outputs {
		p.estimateTokens(items)
	} else {
		p.chat = nil
	}
	return p
}

// estimateTokens counts the prompt tokens of every item offline and
// estimates its reply's: its expected output, else max_tokens, else
// unknown. Every execution (repeat) counts.
func (p *dryRunPlan) estimateTokens(items []*evalrun.Item) {
	var count func(string) int64
	p.encoding, count = tokenCounter(p.chat.Model)
	k := int64(p.repeat)
	for _, it := range items {
		prompt, err := p.chat.Prompt(it)
		if err != nil {
			p.renderErrs++
			if p.firstRender == "" {
				p.firstRender = fmt.Sprintf("%s: %v", it.ID, err)
			}
			continue
		}
		p.inputTokens += k * count(prompt)
		switch {
		case len(it.Expected) > 0:
			p.outputTokens += k * count(evalrun.Text(it.Expected))
			p.fromExpected++
		case p.chat.MaxTokens > 0:
			p.outputTokens += k * int64(p.chat.MaxTokens)
			p.fromMax++
		default:
			p.unknownOutput++
		}
	}
}

// tokenCounter returns the name of model's encoding and a function counting
// a text's tokens in it: cl100k_base for GPT-4 and GPT-3.5 (cl100kModel),
// o200k_base for current OpenAI models (GPT-4o, GPT-4.1, GPT-5, o1-o4) and,
// as an approximation, for models it does not know (local ones).
func tokenCounter(model string) (string, func(string) int64) {
	codec := tokencodec.NewO200kBase()
	if cl100kModel(model) {
		codec = tokencodec.NewCl100kBase()
	}
	return codec.GetName(), func(s string) int64 {
		return countInChunks(func(s string) int64 {
			n, err := codec.Count(s)
			if err != nil {
				return int64(len(s) / 4) // invalid UTF-8: about 4 bytes a token
			}
			return int64(n)
		}, s)
	}
}

// maxTokenChunk bounds the text the tokenizer sees at once: its pre-split
// regexp backtracks over a run of mixed whitespace, in time growing with
// the square of its length (a 1 MB prompt of " \n" kept a dry run busy
// for minutes, and Ctrl-C could not stop it).
const maxTokenChunk = 4096

// countInChunks counts s in pieces of at most maxTokenChunk bytes. A piece
// ends before a space that begins a word (the tokenizer's pieces start
// there: " word"), so ordinary text counts as it would whole; with no such
// place in the second half of the piece, at a rune boundary (an estimate
// off by a token or so).
func countInChunks(count func(string) int64, s string) int64 {
	var n int64
	for len(s) > maxTokenChunk {
		cut := -1
		for i := maxTokenChunk - 1; i >= maxTokenChunk/2; i-- {
			if s[i] == ' ' && !unicode.IsSpace(rune(s[i+1])) && s[i+1] < utf8.RuneSelf {
				cut = i
				break
			}
		}
		if cut < 0 {
			cut = maxTokenChunk
			for cut > 0 && !utf8.RuneStart(s[cut]) {
				cut--
			}
		}
		n += count(s[:cut])
		s = s[cut:]
	}
	return n + count(s)
}

// estimateJudge counts the tokens of judge j's prompts over every
// execution of items, offline.
func estimateJudge(j *suite.JudgePlan, items []*evalrun.Item, repeat int) judgeEstimate {
	e := judgeEstimate{plan: j}
	var count func(string) int64
	e.encoding, count = tokenCounter(j.Model)
	k := int64(repeat)
	for _, it := range items {
		if len(it.Expected) == 0 && !j.Calibration {
			e.noExpected++
		}
		e.inputTokens += k * count(j.Prompt(it))
	}
	e.outputTokens = k * int64(len(items)) * int64(j.MaxTokens)
	return e
}

// write prints the plan.
func (p *dryRunPlan) write(w io.Writer, s *suite.Suite, source string) {
	writeDryRunHeader(w, s, source)
	p.writeBody(w, s)
}

// writeDryRunHeader prints the first lines of a dry run: the suite is
// valid, where the items come from.
func writeDryRunHeader(w io.Writer, s *suite.Suite, source string) {
	fmt.Fprintf(w, "dry run: suite %s is valid; nothing was called, run or stored\n", s.Name)
	fmt.Fprintln(w, source)
}

// writeBody prints the plan of one run: its target, items, requests,
// tokens and cost.
func (p *dryRunPlan) writeBody(w io.Writer, s *suite.Suite) {
	fmt.Fprintf(w, "target: %s (%s)\n", s.TargetInfo.Kind, s.TargetInfo.Name)
	fmt.Fprintf(w, "items: %d selected × %d %s = %d executions\n", p.items, p.repeat, plural(p.repeat, "repeat"), p.executions)
	parts := []string{}
	if p.outputs {
		parts = append(parts, "0 target (saved outputs are scored)")
	} else {
		parts = append(parts, fmt.Sprintf("%d target", p.targetRequests))
	}
	if p.judges > 0 {
		parts = append(parts, fmt.Sprintf("%d llm_judge (%d %s)", p.judgeRequests, p.judges, plural(p.judges, "scorer")))
	}
	fmt.Fprintf(w, "requests: %s = %d, before retries", strings.Join(parts, " + "), p.targetRequests+p.judgeRequests)
	if s.Execution.Cache {
		fmt.Fprint(w, " (execution.cache is on: cached answers are not requested again)")
	}
	fmt.Fprintln(w)
	if p.chat != nil && p.chat.MaxSteps > 0 {
		// The count above is one request per execution; an agent's later
		// turns depend on what the model does, so only their bound is known.
		fmt.Fprintf(w, "agent: each execution makes 1 to %d model requests (max_steps %d), so at most %d target requests; the token and cost estimates are of the first turn only\n",
			p.chat.MaxSteps, p.chat.MaxSteps, p.targetRequests*p.chat.MaxSteps)
	}
	if p.embedders > 0 {
		fmt.Fprintf(w, "embedding requests: at most %d (embedding_similarity, %d %s: each output and each distinct expected output)\n",
			p.embedRequests, p.embedders, plural(p.embedders, "scorer"))
	}
	if p.httpScorers > 0 {
		fmt.Fprintf(w, "http scorer requests: %d (%d %s), before retries\n",
			p.executions*p.httpScorers, p.httpScorers, plural(p.httpScorers, "scorer"))
	}
	if p.execScorers > 0 {
		fmt.Fprintf(w, "exec scorer scorings: %d (%d %s); a dry run starts no scorer program\n",
			p.executions*p.execScorers, p.execScorers, plural(p.execScorers, "scorer"))
	}
	if p.renderErrs > 0 {
		fmt.Fprintf(w, "warning: the prompt does not render for %d %s, which would fail (first: %s)\n",
			p.renderErrs, plural(p.renderErrs, "item"), p.firstRender)
	}
	p.writeCost(w)
	for _, e := range p.judgeEstimates {
		e.write(w)
	}
	if p.embedders > 0 {
		fmt.Fprintln(w, "embedding calls are not estimated (their tokens are those of every output and expected output)")
	}
}

// write prints the judge's token and cost estimates, saying what they
// assume.
func (e *judgeEstimate) write(w io.Writer) {
	j := e.plan
	assume := "the expected outputs as the graded outputs"
	if j.Calibration {
		assume = "the cases the items' inputs spell out; this judge is the target, under calibration"
	}
	if e.noExpected > 0 {
		assume += fmt.Sprintf("; %d %s without one graded as empty", e.noExpected, plural(e.noExpected, "item"))
	}
	out := "output unknown (no max_tokens)"
	if j.MaxTokens > 0 {
		out = fmt.Sprintf("output at most %d (max_tokens %d)", e.outputTokens, j.MaxTokens)
	}
	fmt.Fprintf(w, "judge %s tokens (estimated offline, %s encoding): input %d (from %s); %s\n",
		j.Scorer, e.encoding, e.inputTokens, assume, out)
	pr := j.Price
	if pr == nil {
		fmt.Fprintf(w, "judge %s estimated cost: unknown (no price table: set price {input_per_mtok, output_per_mtok} on the scorer)\n", j.Scorer)
		return
	}
	in := pr.Cost(e.inputTokens, 0)
	if j.MaxTokens == 0 {
		fmt.Fprintf(w, "judge %s estimated cost: %s for the input, plus the verdicts (unknown) at $%g / $%g per million input / output tokens (price)\n",
			j.Scorer, report.FormatUSD(in), pr.InputPerMTok, pr.OutputPerMTok)
		return
	}
	outCost := pr.Cost(0, e.outputTokens)
	fmt.Fprintf(w, "judge %s estimated cost: at most %s (input %s + output %s) at $%g / $%g per million input / output tokens (price)\n",
		j.Scorer, report.FormatUSD(in+outCost), report.FormatUSD(in), report.FormatUSD(outCost), pr.InputPerMTok, pr.OutputPerMTok)
}

// writeCost prints the token and cost estimates, saying what they assume.
func (p *dryRunPlan) writeCost(w io.Writer) {
	if p.chat == nil {
		why := "only an openai target with a price table is priced"
		if slices.ContainsFunc(p.judgeEstimates, func(e judgeEstimate) bool { return e.plan.Calibration }) {
			why = "the target is a judge under calibration: see its estimate below"
		}
		if p.outputs {
			why = "saved outputs are scored, the target is not called"
		}
		fmt.Fprintf(w, "estimated cost: unknown (%s)\n", why)
		return
	}
	var assume []string
	if p.fromExpected > 0 {
		assume = append(assume, fmt.Sprintf("expected outputs for %d %s", p.fromExpected, plural(p.fromExpected, "item")))
	}
	if p.fromMax > 0 {
		assume = append(assume, fmt.Sprintf("max_tokens %d for %d %s without an expected output", p.chat.MaxTokens, p.fromMax, plural(p.fromMax, "item")))
	}
	if p.unknownOutput > 0 {
		assume = append(assume, fmt.Sprintf("unknown for %d %s (no expected output, no max_tokens)", p.unknownOutput, plural(p.unknownOutput, "item")))
	}
	fmt.Fprintf(w, "tokens (estimated offline, %s encoding): input %d; output %d (from %s)\n",
		p.encoding, p.inputTokens, p.outputTokens, strings.Join(assume, "; "))
	pr := p.chat.Price
	if pr == nil {
		fmt.Fprintln(w, "estimated cost: unknown (the target has no price table: set target.price {input_per_mtok, output_per_mtok})")
		return
	}
	in := pr.Cost(p.inputTokens, 0)
	out := pr.Cost(0, p.outputTokens)
	note := ""
	if p.unknownOutput > 0 {
		note = fmt.Sprintf(", plus the output of %d %s (unknown)", p.unknownOutput, plural(p.unknownOutput, "item"))
	}
	fmt.Fprintf(w, "estimated cost: %s (input %s + output %s%s) at $%g / $%g per million input / output tokens (target.price)\n",
		report.FormatUSD(in+out), report.FormatUSD(in), report.FormatUSD(out), note, pr.InputPerMTok, pr.OutputPerMTok)
}

// plural returns word, with an s unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// cl100kModel reports whether model's encoding is cl100k_base (GPT-4,
// GPT-3.5, the embedding models), as tiktoken maps them. Only cl100k and
// o200k are linked, not tokenizer.ForModel: it reaches the p50k and r50k
// vocabularies of retired models (davinci, curie...), generated Go data of
// ~2.9 MB in the binary (docs/benchmarks.md, "Tracing"), which those
// models' estimates do not need (o200k approximates them, as it does any
// model it does not know). cl100k is 2.5 MB of the release binary, which
// stays within 40 MB with it since the OTLP exporter stopped linking gRPC.
func cl100kModel(model string) bool {
	switch model {
	case "gpt-4", "gpt-3.5", "gpt-3.5-turbo", "gpt-35-turbo", "text-embedding-ada-002", "davinci-002", "babbage-002":
		return true
	}
	for _, prefix := range []string{"gpt-4-", "gpt-3.5-turbo-", "gpt-35-turbo-", "ft:gpt-4:", "ft:gpt-4-",
		"ft:gpt-3.5-turbo", "ft:davinci-002", "ft:babbage-002", "text-embedding-3-"} {
		if strings.HasPrefix(model, prefix) {
			return true
		}
	}
	return false
}
