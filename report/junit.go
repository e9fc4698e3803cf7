package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr,omitempty"`
	Suites   []junitSuite `xml:"testsuite"`
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
	Cases      []junitCase     `xml:"testcase"`
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
// failing scorer with its score, threshold and reason. Skipped items have no
// result and so no test case; the run's skipped count is a property. It
// returns [ErrNoItems] for a report built without item rows.
func WriteJUnit(w io.Writer, rep *Report) error {
	if rep.Items == nil {
		return ErrNoItems
	}
	run := &rep.Run
	class := run.Name
	if class == "" {
		class = run.ID
	}
	thresholds := make(map[string]float64, len(rep.Scorers))
	for _, s := range rep.Scorers {
		thresholds[s.Name] = s.Threshold
	}
	suite := junitSuite{
		Name:  class,
		Tests: len(rep.Items),
		Properties: []junitProperty{
			{"run_id", run.ID},
			{"status", string(run.Status)},
			{"dataset", run.Dataset.Name},
			{"dataset_version", strconv.Itoa(run.Dataset.Version)},
			{"target", targetName(rep)},
			{"total", strconv.Itoa(run.Total)},
			{"skipped", strconv.Itoa(run.Skipped)},
			{"persist_errors", strconv.Itoa(run.PersistErrors)},
		},
		Cases: make([]junitCase, 0, len(rep.Items)),
	}
	if run.DurationMS != nil {
		suite.Time = seconds(float64(*run.DurationMS))
	}
	if run.StartedAt != nil {
		suite.Timestamp = run.StartedAt.UTC().Format(time.RFC3339)
	}
	for i := range rep.Items {
		it := &rep.Items[i]
		name := it.ID
		if it.Repeat > 0 {
			name += "#" + strconv.Itoa(it.Repeat)
		}
		tc := junitCase{Name: name, Classname: class, Time: "0"}
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
					strconv.FormatFloat(*s.Score, 'g', -1, 64), strconv.FormatFloat(thresholds[s.Scorer], 'g', -1, 64))
				if s.Reason != nil {
					line += ": " + *s.Reason
				}
				fails = append(fails, line)
			}
		}
		switch {
		case it.Error != nil:
			tc.Error = &junitProblem{Message: truncate(*it.Error, 500), Type: kindText(it.ErrorKind), Body: xmlSafe(*it.Error)}
			suite.Errors++
		case len(errs) > 0:
			tc.Error = &junitProblem{Message: truncate(errs[0], 500), Type: "scorer",
				Body: xmlSafe(strings.Join(append(errs, fails...), "\n"))}
			suite.Errors++
		case len(fails) > 0:
			msg := fails[0]
			if len(fails) > 1 {
				msg = fmt.Sprintf("%d scorers below threshold", len(fails))
			}
			tc.Failure = &junitProblem{Message: truncate(msg, 500), Type: "threshold", Body: xmlSafe(strings.Join(fails, "\n"))}
			suite.Failures++
		}
		suite.Cases = append(suite.Cases, tc)
	}
	doc := junitSuites{Name: "evalrun", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors,
		Time: suite.Time, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// seconds formats milliseconds as seconds with millisecond precision.
func seconds(ms float64) string { return strconv.FormatFloat(ms/1000, 'f', 3, 64) }

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
