package evalrun_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// action is the part of action.yml the harness reads.
type action struct {
	Inputs map[string]struct {
		Required bool   `yaml:"required"`
		Default  string `yaml:"default"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Value string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string       `yaml:"using"`
		Steps []actionStep `yaml:"steps"`
	} `yaml:"runs"`
}

type actionStep struct {
	ID               string            `yaml:"id"`
	If               string            `yaml:"if"`
	Uses             string            `yaml:"uses"`
	With             map[string]string `yaml:"with"`
	Shell            string            `yaml:"shell"`
	Run              string            `yaml:"run"`
	WorkingDirectory string            `yaml:"working-directory"`
	Env              map[string]string `yaml:"env"`
}

func readAction(t *testing.T) *action {
	t.Helper()
	data, err := os.ReadFile("action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var a action
	if err := yaml.Unmarshal(data, &a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	return &a
}

// The scripts never interpolate an expression: the runner would paste an
// input's text into the script before bash reads it (script injection).
// Inputs reach them through env only.
func TestActionScriptsInterpolateNothing(t *testing.T) {
	a := readAction(t)
	if a.Runs.Using != "composite" {
		t.Fatalf("runs.using is %q", a.Runs.Using)
	}
	if !a.Inputs["suite"].Required {
		t.Error("the suite input is not required")
	}
	for _, name := range []string{"fail-on", "report", "version", "args", "working-directory"} {
		if _, ok := a.Inputs[name]; !ok {
			t.Errorf("no %s input", name)
		}
	}
	scripts := 0
	for _, s := range a.Runs.Steps {
		if s.Run == "" {
			continue
		}
		scripts++
		if strings.Contains(s.Run, "${{") {
			t.Errorf("step %s: its script interpolates an expression", s.ID)
		}
		if s.Shell != "bash" {
			t.Errorf("step %s: shell %q, want bash", s.ID, s.Shell)
		}
	}
	if scripts < 3 {
		t.Errorf("%d scripts, want the Go check, the install and the run", scripts)
	}
	var setupGo *actionStep
	for i, s := range a.Runs.Steps {
		if strings.HasPrefix(s.Uses, "actions/setup-go@") {
			setupGo = &a.Runs.Steps[i]
		}
		if s.Uses != "" && !strings.HasPrefix(s.Uses, "actions/setup-go@") {
			t.Errorf("the action uses %s: it uploads nothing and needs only setup-go", s.Uses)
		}
	}
	if setupGo == nil || setupGo.If != "steps.go.outputs.found != 'true'" || setupGo.With["go-version-file"] == "" {
		t.Errorf("setup-go must run only when go is missing, with go-version-file: %+v", setupGo)
	}
}

// harness runs the action's scripts as the runner does (bash --noprofile
// --norc -eo pipefail, env from the step, outputs through $GITHUB_OUTPUT)
// with stub go and evalrun programs on PATH that record their arguments.
type harness struct {
	t         *testing.T
	a         *action
	root      string // everything the run may touch
	workspace string
	stubs     string
	inputs    map[string]string
	github    map[string]string
	outputs   map[string]map[string]string // step id → outputs
	env       []string                     // extra process environment
}

// stubEvalrun records its arguments NUL-separated in $STUB_DIR/evalrun.argv,
// announces a run on standard error, writes every -o file (a JSON report
// with a macro pass rate) and exits $STUB_EXIT.
const stubEvalrun = `#!/bin/sh
: > "$STUB_DIR/evalrun.argv"
for a in "$@"; do printf '%s\0' "$a" >> "$STUB_DIR/evalrun.argv"; done
echo "warning: something first" >&2
echo "run 20260101T000000-stub started: suite s" >&2
echo "the table"
prev=
for a in "$@"; do
  if [ "$prev" = "-o" ]; then mkdir -p "$(dirname "$a")"; printf '{"macro_pass_rate": 0.75}\n' > "$a"; fi
  prev=$a
done
echo "run 20260101T000000-stub finished with problems:" >&2
exit "${STUB_EXIT:-0}"
`

// stubGo answers go env GOVERSION and, for go install, records its
// arguments and GOBIN and puts a stub evalrun in GOBIN.
const stubGo = `#!/bin/sh
case "$1" in
env) echo go1.26.8 ;;
install)
  : > "$STUB_DIR/go.argv"
  for a in "$@"; do printf '%s\0' "$a" >> "$STUB_DIR/go.argv"; done
  printf '%s' "$GOBIN" > "$STUB_DIR/go.gobin"
  printf '#!/bin/sh\necho "evalrun stub"\n' > "$GOBIN/evalrun"
  chmod +x "$GOBIN/evalrun" ;;
*) exit 9 ;;
esac
`

func newHarness(t *testing.T) *harness {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	root := t.TempDir()
	h := &harness{t: t, a: readAction(t), root: root, workspace: filepath.Join(root, "workspace"),
		stubs: filepath.Join(root, "stubs"), inputs: map[string]string{},
		github:  map[string]string{"action_ref": "", "action_path": filepath.Join(root, "action")},
		outputs: map[string]map[string]string{}}
	for _, d := range []string{h.workspace, h.stubs, filepath.Join(root, "temp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, text := range map[string]string{"evalrun": stubEvalrun, "go": stubGo} {
		if err := os.WriteFile(filepath.Join(h.stubs, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

var expression = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

// eval substitutes the ${{ }} expressions of s the way the runner does.
func (h *harness) eval(s string) string {
	return expression.ReplaceAllStringFunc(s, func(m string) string {
		e := expression.FindStringSubmatch(m)[1]
		switch {
		case strings.HasPrefix(e, "inputs."):
			name := strings.TrimPrefix(e, "inputs.")
			in, ok := h.a.Inputs[name]
			if !ok {
				h.t.Fatalf("unknown input %s", name)
			}
			if v, ok := h.inputs[name]; ok {
				return v
			}
			return in.Default
		case strings.HasPrefix(e, "github."):
			v, ok := h.github[strings.TrimPrefix(e, "github.")]
			if !ok {
				h.t.Fatalf("unknown expression %s", e)
			}
			return v
		case strings.HasPrefix(e, "steps."):
			parts := strings.Split(e, ".") // steps.ID.outputs.NAME
			return h.outputs[parts[1]][parts[3]]
		}
		h.t.Fatalf("unknown expression %s", e)
		return ""
	})
}

// step runs the script of the step with id and returns its exit code and
// combined output.
func (h *harness) step(id string) (int, string) {
	h.t.Helper()
	for _, s := range h.a.Runs.Steps {
		if s.ID != id {
			continue
		}
		script := filepath.Join(h.root, "temp", id+".sh")
		// As the runner does: expressions are pasted into the script
		// before bash reads it (there should be none; see
		// TestActionScriptsInterpolateNothing).
		if err := os.WriteFile(script, []byte(h.eval(s.Run)), 0o644); err != nil {
			h.t.Fatal(err)
		}
		out := filepath.Join(h.root, "temp", id+".output")
		os.Remove(out)
		cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", script)
		cmd.Dir = filepath.Join(h.workspace, h.eval(cmp(s.WorkingDirectory, ".")))
		cmd.Env = append([]string{"PATH=" + h.stubs + ":/usr/bin:/bin", "HOME=" + h.root, "STUB_DIR=" + h.stubs,
			"RUNNER_TEMP=" + filepath.Join(h.root, "temp"), "GITHUB_OUTPUT=" + out,
			"GITHUB_PATH=" + filepath.Join(h.root, "temp", "path")}, h.env...)
		for k, v := range s.Env {
			cmd.Env = append(cmd.Env, k+"="+h.eval(v))
		}
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		err := cmd.Run()
		code := cmd.ProcessState.ExitCode()
		if err != nil && code < 0 {
			h.t.Fatalf("step %s: %v", id, err)
		}
		h.outputs[id] = readOutputs(h.t, out)
		return code, buf.String()
	}
	h.t.Fatalf("no step %s", id)
	return 0, ""
}

func cmp(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// readOutputs parses a $GITHUB_OUTPUT file: name=value lines and
// name<<DELIMITER blocks.
func readOutputs(t *testing.T, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if name, delim, ok := strings.Cut(line, "<<"); ok && !strings.Contains(name, "=") {
			var lines []string
			for sc.Scan() && sc.Text() != delim {
				lines = append(lines, sc.Text())
			}
			out[name] = strings.Join(lines, "\n")
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: bad line %q", path, line)
		}
		out[name] = value
	}
	return out
}

// argv reads a stub's recorded arguments.
func (h *harness) argv(name string) []string {
	h.t.Helper()
	data, err := os.ReadFile(filepath.Join(h.stubs, name+".argv"))
	if err != nil {
		h.t.Fatalf("%s was not run: %v", name, err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
}

// output is an output of the action, through its outputs: mapping.
func (h *harness) output(name string) string {
	o, ok := h.a.Outputs[name]
	if !ok {
		h.t.Fatalf("no output %s", name)
	}
	return h.eval(o.Value)
}

// pwned fails the test when any file named pwned exists: a hostile input
// ran a command.
func (h *harness) noCommandRan() {
	h.t.Helper()
	filepath.WalkDir(h.root, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "pwned" {
			h.t.Errorf("an input ran a command: %s exists", path)
		}
		return nil
	})
}

// Hostile inputs are inert: each reaches evalrun as the argument it is,
// quotes and all, and no command in them runs.
func TestActionRunsHostileInputsInert(t *testing.T) {
	h := newHarness(t)
	if err := os.MkdirAll(filepath.Join(h.workspace, "evals dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	touch := "touch " + filepath.Join(h.root, "pwned")
	h.inputs = map[string]string{
		"suite":             "x; " + touch + "; #`" + touch + "`$(" + touch + ").yaml",
		"fail-on":           "  pass_rate(exact_match) < 0.9  \n\n\"; " + touch + "; echo \"\n$(" + touch + ")\r\nfailed > 0",
		"report":            "report.json, out/report.md\n$(" + touch + ").xml\n\n  report page.html  ,",
		"args":              `--tag "a b" --limit 3 '$(` + touch + `)' $HOME * ` + "`" + touch + "`",
		"working-directory": "evals dir",
	}
	code, log := h.step("run")
	if code != 0 {
		t.Fatalf("run step: exit %d\n%s", code, log)
	}
	want := []string{"run", h.inputs["suite"],
		"--fail-on", "pass_rate(exact_match) < 0.9",
		"--fail-on", `"; ` + touch + `; echo "`,
		"--fail-on", "$(" + touch + ")",
		"--fail-on", "failed > 0",
		"-o", "report.json", "-o", "out/report.md", "-o", "$(" + touch + ").xml", "-o", "report page.html",
		"--tag", "a b", "--limit", "3", "$(" + touch + ")", "$HOME", "*", "`touch", filepath.Join(h.root, "pwned") + "`"}
	if got := h.argv("evalrun"); !slices.Equal(got, want) {
		t.Errorf("evalrun got\n%q\nwant\n%q", got, want)
	}
	h.noCommandRan()
	if !strings.Contains(log, "run 20260101T000000-stub started") || !strings.Contains(log, "the table") {
		t.Errorf("evalrun's output is not in the log:\n%s", log)
	}
	wantReports := "evals dir/report.json\nevals dir/out/report.md\nevals dir/$(" + touch + ").xml\nevals dir/report page.html"
	for name, want := range map[string]string{"exit-code": "0", "run-id": "20260101T000000-stub", "reports": wantReports} {
		if got := h.output(name); got != want {
			t.Errorf("output %s = %q, want %q", name, got, want)
		}
	}
	if _, err := exec.LookPath("jq"); err == nil {
		if got := h.output("pass-rate"); got != "0.75" {
			t.Errorf("output pass-rate = %q, want 0.75", got)
		}
	}
}

// A failing run fails the step with evalrun's exit code, after setting
// the outputs; inputs left out mean no flag; a report not written is not
// listed.
func TestActionRunPassesTheExitCode(t *testing.T) {
	for _, exit := range []string{"1", "2", "130"} {
		h := newHarness(t)
		h.env = []string{"STUB_EXIT=" + exit}
		h.inputs = map[string]string{"suite": "suite.yaml"}
		code, log := h.step("run")
		if code != map[string]int{"1": 1, "2": 2, "130": 130}[exit] {
			t.Errorf("exit %d, want %s\n%s", code, exit, log)
		}
		if got := h.argv("evalrun"); !slices.Equal(got, []string{"run", "suite.yaml"}) {
			t.Errorf("evalrun got %q", got)
		}
		if got := h.output("exit-code"); got != exit {
			t.Errorf("output exit-code = %q, want %s", got, exit)
		}
		if got := h.output("reports"); got != "" {
			t.Errorf("output reports = %q", got)
		}
	}
}

// An args input with an unmatched quote or an empty suite is refused
// (exit 2) before evalrun runs.
func TestActionRunRefusesBadInputs(t *testing.T) {
	for _, inputs := range []map[string]string{
		{"suite": "s.yaml", "args": `--tag "oops`},
		{"suite": "  "},
	} {
		h := newHarness(t)
		h.inputs = inputs
		code, log := h.step("run")
		if code != 2 || !strings.Contains(log, "::error::evalrun: ") {
			t.Errorf("%q: exit %d\n%s", inputs, code, log)
		}
		if _, err := os.Stat(filepath.Join(h.stubs, "evalrun.argv")); err == nil {
			t.Errorf("%q: evalrun ran", inputs)
		}
	}
}

// The install step installs the version input, else the action's ref,
// else the latest, as one argument (a hostile version is inert), into a
// directory it adds to PATH.
func TestActionInstall(t *testing.T) {
	const pkg = "github.com/evalrun/evalrun/cmd/evalrun@"
	for _, tc := range []struct{ version, ref, want string }{
		{"", "", "latest"},
		{"", "v1.4.0", "v1.4.0"},
		{"v1.5.0", "v1.4.0", "v1.5.0"},
		{" v1.5.0\n", "", "v1.5.0"},
		{"main; touch pwned", "", "main;touchpwned"}, // a version has no spaces: they are dropped
	} {
		h := newHarness(t)
		h.inputs["version"] = strings.ReplaceAll(tc.version, "touch pwned", "touch "+filepath.Join(h.root, "pwned"))
		h.github["action_ref"] = tc.ref
		code, log := h.step("install")
		if code != 0 {
			t.Fatalf("%+v: exit %d\n%s", tc, code, log)
		}
		want := []string{"install", pkg + strings.ReplaceAll(tc.want, "touchpwned", "touch"+filepath.Join(h.root, "pwned"))}
		if got := h.argv("go"); !slices.Equal(got, want) {
			t.Errorf("%+v: go got %q, want %q", tc, got, want)
		}
		h.noCommandRan()
		gobin, _ := os.ReadFile(filepath.Join(h.stubs, "go.gobin"))
		path, _ := os.ReadFile(filepath.Join(h.root, "temp", "path"))
		if len(gobin) == 0 || strings.TrimSpace(string(path)) != string(gobin) || !strings.Contains(log, "evalrun stub") ||
			h.outputs["install"]["path"] != filepath.Join(string(gobin), "evalrun") {
			t.Errorf("%+v: GOBIN %q, GITHUB_PATH %q, outputs %v\n%s", tc, gobin, path, h.outputs["install"], log)
		}
		// The run step runs the evalrun just installed, not one on PATH.
		h.inputs["suite"] = "s.yaml"
		if code, log := h.step("run"); code != 0 || !strings.Contains(log, "evalrun stub") {
			t.Errorf("%+v: the run step did not run the installed evalrun: exit %d\n%s", tc, code, log)
		}
	}
}

// The Go check finds a go of 1.21 or later (which fetches the toolchain
// go.mod asks for) and reports a missing one.
func TestActionFindsGo(t *testing.T) {
	h := newHarness(t)
	if code, log := h.step("go"); code != 0 || h.outputs["go"]["found"] != "true" {
		t.Errorf("with go: exit %d, outputs %v\n%s", code, h.outputs["go"], log)
	}
	if err := os.Remove(filepath.Join(h.stubs, "go")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/usr/bin/go"); err == nil {
		t.Skip("/usr/bin/go exists: cannot hide go")
	}
	if code, log := h.step("go"); code != 0 || h.outputs["go"]["found"] != "false" {
		t.Errorf("without go: exit %d, outputs %v\n%s", code, h.outputs["go"], log)
	}
}
