package report

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/evalrun/evalrun/internal/bounded"
)

type junitSuites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Time     string   `xml:"time,attr,omitempty"`
	// Suites are nil when written: the suite comes after the start
	// element (see [junitWriter.write]).
	Suites []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr,omitempty"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	// Cases are nil when written: they are streamed after the properties
	// (see [junitWriter.write]).
	Cases []junitCase `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Error     *junitProblem `xml:"error"`
	Failure   *junitProblem `xml:"failure"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",cdata"`
}

// WriteJUnit writes rep as JUnit XML for CI systems: a <testsuites> root
// holding one <testsuite> named after the run, with one <testcase> per
// item row (name = item id, with "#repeat" appended when repeat > 0;
// classname = run name). A target error or a scorer error gives an <error>
// (type = the error kind, or "scorer"); otherwise a scorer below its
// threshold gives a <failure> (type "threshold") whose text lists every
// failing scorer with its score, threshold and reason; for an agent item
// (a trajectory or a conversation input) the text adds the conversation
// and the trajectory, one bounded line per message and call. Skipped items have no
// result and so no test case; the run's skipped count is a property. It
// returns [ErrNoItems] for a report built without item rows
// ([WriteJUnitStream] writes one with rows read from storage).
func WriteJUnit(w io.Writer, rep *Report) error {
	if rep.Items == nil {
		return ErrNoItems
	}
	j := newJUnitWriter(rep)
	var n junitCounts
	for i := range rep.Items {
		n.add(j.testCase(&rep.Items[i]))
	}
	return j.write(w, n, func(fn func(*ItemRow) error) error {
		for i := range rep.Items {
			if err := fn(&rep.Items[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// junitWriter writes the JUnit XML of a report whose rows come from an
// iterator, so that they need not be held ([WriteJUnit],
// [WriteJUnitStream]).
type junitWriter struct {
	rep        *Report
	class      string
	thresholds map[string]float64
}

func newJUnitWriter(rep *Report) *junitWriter {
	class := rep.Run.Name
	if class == "" {
		class = rep.Run.ID
	}
	thresholds := make(map[string]float64, len(rep.Scorers))
	for _, s := range rep.Scorers {
		thresholds[s.Name] = s.Threshold
	}
	return &junitWriter{rep: rep, class: class, thresholds: thresholds}
}

// junitCounts are the totals the <testsuites> and <testsuite> elements
// carry, counted before the cases are written.
type junitCounts struct{ tests, failures, errors int }

// add counts one test case.
func (n *junitCounts) add(tc junitCase) {
	n.tests++
	switch {
	case tc.Error != nil:
		n.errors++
	case tc.Failure != nil:
		n.failures++
	}
}

// testCase returns the test case of an item row.
func (j *junitWriter) testCase(it *ItemRow) junitCase {
	name := label(it.ID)
	if it.Repeat > 0 {
		name += "#" + strconv.Itoa(it.Repeat)
	}
	tc := junitCase{Name: name, Classname: j.class, Time: "0"}
	if it.LatencyMS != nil {
		tc.Time = seconds(*it.LatencyMS)
	}
	var errs, fails []string
	for _, s := range it.Scores {
		switch {
		case s.Error != nil:
			errs = append(errs, fmt.Sprintf("%s: error: %s", s.Scorer, *s.Error))
		case s.Score != nil && !s.Passed:
			line := fmt.Sprintf("%s: score %s below threshold %s", s.Scorer,
				strconv.FormatFloat(*s.Score, 'g', -1, 64), strconv.FormatFloat(j.thresholds[s.Scorer], 'g', -1, 64))
			if s.Reason != nil {
				line += ": " + *s.Reason
			}
			fails = append(fails, line)
		}
	}
	// A failing agent item's text also says what the agent was given (a
	// conversation) and what it did (its trajectory), each bounded.
	body := func(text string) string {
		if d := agentDetails(it); d != "" {
			return problemBody(bounded.Prefix(text, maxProblemBytes/2) + "\n\n" + d)
		}
		return problemBody(text)
	}
	switch {
	case it.Error != nil:
		tc.Error = &junitProblem{Message: truncate(*it.Error, 500), Type: kindText(it.ErrorKind), Body: body(*it.Error)}
	case len(errs) > 0:
		tc.Error = &junitProblem{Message: truncate(errs[0], 500), Type: "scorer",
			Body: body(strings.Join(append(errs, fails...), "\n"))}
	case len(fails) > 0:
		msg := fails[0]
		if len(fails) > 1 {
			msg = fmt.Sprintf("%d scorers below threshold", len(fails))
		}
		tc.Failure = &junitProblem{Message: truncate(msg, 500), Type: "threshold", Body: body(strings.Join(fails, "\n"))}
	}
	return tc
}

// write writes the document: the root and suite elements with counts n,
// then the test case of every row each yields (n must count those same
// rows), one at a time.
func (j *junitWriter) write(w io.Writer, n junitCounts, each func(func(*ItemRow) error) error) error {
	run := &j.rep.Run
	suite := junitSuite{
		Name: j.class, Tests: n.tests, Failures: n.failures, Errors: n.errors, Skipped: run.Skipped,
		Properties: []junitProperty{
			{"run_id", run.ID},
			{"status", string(run.Status)},
			{"dataset", run.Dataset.Name},
			{"dataset_version", strconv.Itoa(run.Dataset.Version)},
			{"target", targetName(j.rep)},
			{"total", strconv.Itoa(run.Total)},
			{"skipped", strconv.Itoa(run.Skipped)},
			{"persist_errors", strconv.Itoa(run.PersistErrors)},
		},
	}
	if run.DurationMS != nil {
		suite.Time = seconds(float64(*run.DurationMS))
	}
	if run.StartedAt != nil {
		suite.Timestamp = run.StartedAt.UTC().Format(time.RFC3339)
	}
	root := junitSuites{Name: "evalrun", Tests: n.tests, Failures: n.failures, Errors: n.errors, Time: suite.Time}

	bw := bufio.NewWriterSize(w, 64<<10)
	if _, err := bw.WriteString(xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(bw)
	enc.Indent("", "  ")
	rootStart, err := startOf(root, "testsuites")
	if err != nil {
		return err
	}
	suiteStart, err := startOf(suite, "testsuite")
	if err != nil {
		return err
	}
	if err := enc.EncodeToken(rootStart); err != nil {
		return err
	}
	if err := enc.EncodeToken(suiteStart); err != nil {
		return err
	}
	props := struct {
		P []junitProperty `xml:"property"`
	}{suite.Properties}
	if err := enc.EncodeElement(props, xml.StartElement{Name: xml.Name{Local: "properties"}}); err != nil {
		return err
	}
	caseStart := xml.StartElement{Name: xml.Name{Local: "testcase"}}
	err = each(func(it *ItemRow) error {
		tc := j.testCase(it)
		return enc.EncodeElement(&tc, caseStart)
	})
	if err != nil {
		return err
	}
	if err := enc.EncodeToken(suiteStart.End()); err != nil {
		return err
	}
	if err := enc.EncodeToken(rootStart.End()); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	if _, err := bw.WriteString("\n"); err != nil {
		return err
	}
	return bw.Flush()
}

// startOf returns the start element named name with the attributes
// encoding/xml writes for v (the first token of v marshaled).
func startOf(v any, name string) (xml.StartElement, error) {
	data, err := xml.Marshal(v)
	if err != nil {
		return xml.StartElement{}, err
	}
	tok, err := xml.NewDecoder(bytes.NewReader(data)).RawToken()
	if err != nil {
		return xml.StartElement{}, err
	}
	start, ok := tok.(xml.StartElement)
	if !ok {
		return xml.StartElement{}, fmt.Errorf("report: junit: no start element")
	}
	start.Name = xml.Name{Local: name}
	return start, nil
}

// seconds formats milliseconds as seconds with millisecond precision.
func seconds(ms float64) string { return strconv.FormatFloat(ms/1000, 'f', 3, 64) }

// maxProblemBytes bounds the text of a test case's error or failure: a
// target's error or a judge's reason can be as large as what it echoes.
const maxProblemBytes = 64 << 10

// problemBody is the text of an error or failure element: cut to
// [maxProblemBytes] with the truncation marker, made XML-safe.
func problemBody(s string) string { return xmlSafe(bounded.Cut(s, maxProblemBytes)) }

// xmlSafe replaces the characters XML 1.0 cannot carry (most control
// characters, invalid UTF-8) with U+FFFD, for CDATA sections, which
// encoding/xml writes as they are.
func xmlSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20, r == 0xFFFE, r == 0xFFFF, r == utf8.RuneError:
			return '\uFFFD'
		}
		return r
	}, s)
}
