package cli

import (
	"encoding/json"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/evalrun/evalrun/examples/variants/fakemodel"
)

// variantsExampleReport is what the variants example's test reads of the
// experiment report (docs/report-schema.md, docs/variants.md).
type variantsExampleReport struct {
	SchemaVersion int `json:"schema_version"`
	Experiment    struct {
		Name     string `json:"name"`
		Baseline string `json:"baseline"`
	} `json:"experiment"`
	Variants []struct {
		Name    string `json:"name"`
		Status  string `json:"status"`
		Total   int    `json:"total"`
		Failed  int    `json:"failed"`
		Target  struct{ Kind, Name string }
		Scorers map[string]struct {
			PassRate   *float64  `json:"pass_rate"`
			PassRateCI []float64 `json:"pass_rate_ci"`
		} `json:"scorers"`
		VsBaseline map[string]struct {
			Delta     *float64  `json:"delta"`
			CI        []float64 `json:"ci"`
			PValue    *float64  `json:"p_value"`
			Verdict   string    `json:"verdict"`
			Paired    int       `json:"paired"`
			Improved  int       `json:"improved"`
			Regressed int       `json:"regressed"`
		} `json:"vs_baseline"`
	} `json:"variants"`
	Items []struct {
		ID       string `json:"id"`
		Disagree bool   `json:"disagree"`
		Variants map[string]struct {
			Output json.RawMessage `json:"output"`
		} `json:"variants"`
	} `json:"items"`
}

// The variants example, end to end: examples/variants/suite.yaml through
// the CLI against its fake model served in-process, as
// examples/variants/run.sh does with the binaries. Three variants run,
// the report says large is better than the baseline (8 items improve,
// none regresses: p = 2/2^8) and terse the same (p = 1), with the Wilson
// intervals of 12/20 and 20/20, and the gate holds (exit 0).
func TestVariantsExample(t *testing.T) {
	suitePath, err := filepath.Abs("../../examples/variants/suite.yaml")
	if err != nil {
		t.Fatal(err)
	}
	model := fakemodel.New()
	srv := httptest.NewServer(model)
	t.Cleanup(srv.Close)
	b := setup(t)
	b.env = append(b.env, "VARIANTS_BASE_URL="+srv.URL+"/v1")
	out, md := filepath.Join(b.dir, "report.json"), filepath.Join(b.dir, "report.md")
	code, stdout, stderr := b.run("run", suitePath, "-q", "-o", out, "-o", md)
	if code != 0 {
		t.Fatalf("exit %d, want 0\nstderr:\n%s", code, stderr)
	}
	for _, want := range []string{"large vs small: capital +0.40", "better", "terse vs small: capital +0.00", "same"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the terminal report lacks %q:\n%s", want, stdout)
		}
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep variantsExampleReport
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.SchemaVersion != 3 || rep.Experiment.Name != "capitals" || rep.Experiment.Baseline != "small" {
		t.Errorf("schema_version %d, experiment %+v", rep.SchemaVersion, rep.Experiment)
	}
	var names []string
	for _, v := range rep.Variants {
		names = append(names, v.Name)
	}
	if !slices.Equal(names, []string{"small", "large", "terse"}) {
		t.Fatalf("variants %v", names)
	}
	near := func(got *float64, want float64) bool { return got != nil && math.Abs(*got-want) < 1e-4 }
	for i, want := range []struct {
		model    string
		passRate float64
		ci       [2]float64
	}{
		{"fake-small", 0.6, [2]float64{0.3866, 0.7812}}, // Wilson 12/20
		{"fake-large", 1, [2]float64{0.8389, 1}},        // Wilson 20/20: lo = n/(n+z²)
		{"fake-small", 0.6, [2]float64{0.3866, 0.7812}},
	} {
		v := rep.Variants[i]
		s := v.Scorers["capital"]
		if v.Status != "completed" || v.Total != 20 || v.Failed != 0 || v.Target.Kind != "openai" || v.Target.Name != want.model {
			t.Errorf("variant %s: status %s, total %d, failed %d, target %+v", v.Name, v.Status, v.Total, v.Failed, v.Target)
		}
		if !near(s.PassRate, want.passRate) || len(s.PassRateCI) != 2 ||
			math.Abs(s.PassRateCI[0]-want.ci[0]) > 1e-4 || math.Abs(s.PassRateCI[1]-want.ci[1]) > 1e-4 {
			t.Errorf("variant %s: pass rate %v %v, want %v %v", v.Name, deref(s.PassRate), s.PassRateCI, want.passRate, want.ci)
		}
	}
	if len(rep.Variants[0].VsBaseline) != 0 {
		t.Errorf("the baseline compares with itself: %+v", rep.Variants[0].VsBaseline)
	}
	large, terse := rep.Variants[1].VsBaseline["capital"], rep.Variants[2].VsBaseline["capital"]
	if large.Verdict != "better" || !near(large.Delta, 0.4) || !near(large.PValue, 2/256.0) ||
		large.Paired != 20 || large.Improved != 8 || large.Regressed != 0 || len(large.CI) != 2 || large.CI[0] <= 0 {
		t.Errorf("large vs small: %+v (delta %v, p %v), want better, +0.4, p 0.0078, 8 improved", large, deref(large.Delta), deref(large.PValue))
	}
	if terse.Verdict != "same" || !near(terse.Delta, 0) || !near(terse.PValue, 1) || terse.Improved != 0 || terse.Regressed != 0 {
		t.Errorf("terse vs small: %+v (delta %v, p %v), want same, 0, p 1", terse, deref(terse.Delta), deref(terse.PValue))
	}

	// The items side by side: the eight tricky countries are where the
	// variants disagree, and the one-word prompt answers in one word.
	var disagree []string
	for _, it := range rep.Items {
		if it.Disagree {
			disagree = append(disagree, it.ID)
		}
	}
	if want := []string{"australia", "canada", "turkey", "brazil", "switzerland", "nigeria", "morocco", "new-zealand"}; !slices.Equal(disagree, want) {
		t.Errorf("disagree on %v, want %v", disagree, want)
	}
	if len(rep.Items) != 20 {
		t.Fatalf("%d items, want 20", len(rep.Items))
	}
	au := rep.Items[12]
	for v, want := range map[string]string{"small": `"The capital of Australia is Sydney."`, "large": `"The capital of Australia is Canberra."`, "terse": `"Sydney"`} {
		if got := string(au.Variants[v].Output); au.ID != "australia" || got != want {
			t.Errorf("item %s variant %s: output %s, want %s", au.ID, v, got, want)
		}
	}
	if got := model.Served(); got["fake-small"] != 40 || got["fake-large"] != 20 || len(got) != 2 {
		t.Errorf("the model served %v, want 40 requests of fake-small (small and terse) and 20 of fake-large", got)
	}
	if m, err := os.ReadFile(md); err != nil || !strings.Contains(string(m), "better") || !strings.Contains(string(m), "australia") {
		t.Errorf("report.md: %v\n%s", err, m)
	}
}
