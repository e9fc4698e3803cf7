package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/inmem"
)

const (
	xssScript = `<script>alert(1)</script>`
	xssImg    = `"><img src=x onerror=alert(1)>`
)

// TestUserDataEscaped stores an item whose input, output, expected output,
// tag, reason, errors and run name hold markup, and proves that every page
// shows them as text: the raw tags never reach the HTML.
func TestUserDataEscaped(t *testing.T) {
	st := inmem.New()
	ctx := context.Background()
	evil := xssScript + xssImg
	items := []*evalrun.Item{{
		ID:       "evil-1",
		Input:    evalrun.String(evil),
		Expected: evalrun.JSON(map[string]any{"html": evil}),
		Metadata: map[string]any{"tags": []any{xssImg}, "note": xssScript},
	}, {ID: "ok-1", Input: evalrun.String("fine")}}
	if _, _, err := st.ImportDataset(ctx, "evil", items); err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"20260304T100000-evil0001", "20260304T110000-evil0002"} {
		run := &evalrun.Run{
			ID: id, Name: evil, Dataset: "evil", DatasetVersion: 1,
			Target:  evalrun.TargetInfo{Kind: "http", Name: xssImg},
			Scorers: []evalrun.ScorerInfo{{Name: "judge", Kind: "llm_judge", Threshold: 0.5}},
			Status:  evalrun.RunFailed, Total: 2, Succeeded: 1, Failed: 1, Error: evil,
			CreatedAt: t0.Add(time.Duration(i) * time.Hour), StartedAt: t0, CompletedAt: t0.Add(time.Minute),
		}
		if err := st.CreateRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		score := float64(1 - i)
		results := []*evalrun.ItemResult{{
			RunID: id, Index: 0, ItemID: "evil-1", Output: evalrun.String(evil), Attempts: 1, Latency: time.Second,
			Scores: []evalrun.ScorerResult{{Scorer: "judge", Score: &score, Passed: score >= 0.5, Reason: evil}},
			// An agent's trajectory: tool names, arguments, outputs and
			// errors are the model's and the tools'.
			Trajectory: &evalrun.Trajectory{Steps: 2, Calls: []evalrun.ToolCall{
				{Name: evil, Args: json.RawMessage(`{"q":` + strconv.Quote(evil) + `}`), Output: json.RawMessage(strconv.Quote(evil))},
				{Name: "t", Args: json.RawMessage(`{}`), Error: evil},
			}},
		}, {
			RunID: id, Index: 1, ItemID: "ok-1", Error: evil, ErrorKind: evalrun.ErrorPermanent, Attempts: 1,
			Trajectory: &evalrun.Trajectory{Calls: []evalrun.ToolCall{{Name: evil, Args: json.RawMessage(`{}`), Error: evil}}},
		}}
		if err := st.WriteResults(ctx, results); err != nil {
			t.Fatal(err)
		}
	}
	b := setupStore(t, st, Options{})
	a, c := "20260304T100000-evil0001", "20260304T110000-evil0002"
	pages := []string{
		"/", "/runs/" + c, "/runs/" + c + "/items", "/runs/" + c + "/items?failed=1",
		"/runs/" + c + "/items?tag=" + strings.ReplaceAll(xssImg, " ", "+"),
		"/runs/" + c + "/items/0", "/runs/" + c + "/items/1", "/compare?a=" + a + "&b=" + c,
		"/runs/" + c + "/items?q=" + "%3Cscript%3E", // the query echoed in the search box
	}
	for _, p := range pages {
		body := b.mustGet(t, p, http.StatusOK).body
		lacks(t, p, body, "<script>alert", "<img src=x", "onerror=alert(1)>", `"><img`)
		if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") && !strings.Contains(body, "&lt;img src=x") {
			t.Errorf("%s: the markup is not shown as text", p)
		}
	}
	// The item page shows each field as text.
	body := b.mustGet(t, "/runs/"+c+"/items/0", http.StatusOK).body
	contains(t, "item page", body,
		"&lt;script&gt;alert(1)&lt;/script&gt;&#34;&gt;&lt;img src=x onerror=alert(1)&gt;", // input, output, reason
		"&#34;html&#34;: &#34;\\u003cscript\\u003e",                                        // expected: pretty JSON keeps the JSON escapes
		`<span class="call-name mono">&lt;script&gt;alert(1)&lt;/script&gt;&#34;&gt;&lt;img src=x onerror=alert(1)&gt;</span>`,
		`&#34;q&#34;: &#34;&lt;script&gt;alert(1)&lt;/script&gt;\&#34;&gt;&lt;img src=x onerror=alert(1)&gt;&#34;`,
		`<pre class="value error-value">&lt;script&gt;alert(1)&lt;/script&gt;&#34;&gt;&lt;img src=x onerror=alert(1)&gt;</pre>`,
	)
}
