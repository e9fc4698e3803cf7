package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/dataset"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/report"
	"github.com/evalrun/evalrun/scorer"
	"github.com/evalrun/evalrun/suite"
)

// prepared is everything a run needs, validated before anything executes.
type prepared struct {
	suite  *suite.Suite
	record *evalrun.Run
	// items stream the selected items from the store's pinned version:
	// nothing holds the dataset.
	items      engine.ItemSource
	target     evalrun.Target
	conditions []report.Condition
	resume     bool
	// datasetNote says what the dataset import did, printed after the run
	// line.
	datasetNote string
	// dbFlag is " --db URL" for printed commands, or "".
	dbFlag string
	// experiment is set for a suite with variants (and a resumed
	// experiment): record and target are then unset, each variant having
	// its own.
	experiment *experiment
}

// prepareRun loads the suite (or, on resume, the stored run and its
// config), applies the flags, imports the dataset file and selects the
// items. Every error here means nothing ran.
func (st *State) prepareRun(cmd *cobra.Command, store evalrun.Store, path string, f *runFlags) (*prepared, error) {
	ctx := cmd.Context()
	p := &prepared{resume: f.resume != "", dbFlag: st.dbFlagFor(cmd)}
	opts := suite.Options{Env: st.lookupEnv(), Deps: modelDeps()}
	if c, ok := store.(evalrun.ResponseCache); ok {
		opts.Cache = c // judges use it while execution.cache is on
	}
	var err error
	if p.resume {
		for _, name := range []string{"limit", "tag", "dataset-version", "outputs"} {
			if cmd.Flags().Changed(name) {
				return nil, invalidf("--%s cannot be used with --resume: a resumed run keeps its item selection", name)
			}
		}
		if len(f.variants) > 0 {
			return nil, invalidf("--variant cannot be used with --resume: --resume EXPERIMENT_ID resumes every unfinished variant; " +
				"resume one variant's run with evalrun run --resume RUN_ID")
		}
		if evalrun.IsExperimentID(f.resume) {
			if f.distributed && distributedVariants == nil {
				return nil, invalidf("%s", errDistributedExperiment)
			}
			if _, _, err := experimentTargets(f.format, f.outFiles); err != nil {
				return nil, err
			}
			return st.prepareExperimentResume(cmd, store, f, p, opts)
		}
		if p.record, err = store.GetRun(ctx, f.resume); err != nil {
			return nil, notFound(err, "run "+f.resume, "evalrun runs list shows the runs")
		}
		if !p.record.Resumable() {
			return nil, refuseResume(p.record, st.Now())
		}
		if p.suite, err = suite.FromRunConfig(p.record.Config, opts); err != nil {
			return nil, err
		}
	} else if p.suite, err = suite.Load(path, opts); err != nil {
		return nil, err
	}
	st.scrubOutput(p.suite)
	if !p.resume {
		if err := checkVariantFlags(p.suite, f); err != nil {
			p.suite.Close()
			return nil, err
		}
	}
	ok := false
	defer func() {
		if !ok {
			p.suite.Close()
		}
	}()
	s := p.suite
	o := f.overrides(cmd)
	if err := f.exec.apply(cmd, &o); err != nil {
		return nil, err
	}
	if err := s.Apply(o); err != nil {
		return nil, err
	}
	if p.conditions, err = conditions(s, f.failOn); err != nil {
		return nil, err
	}

	name, version := s.Dataset.Name, 0
	if p.resume {
		name, version = p.record.Dataset, p.record.DatasetVersion
	} else {
		outputs, err := absPath(f.outputs)
		if err != nil {
			return nil, err
		}
		s.Selection = suite.Selection{Tags: f.tags, Limit: f.limit, Outputs: outputs}
		if f.limit < 0 {
			return nil, invalidf("--limit %d: must not be negative", f.limit)
		}
		if version, err = st.importDataset(cmd, store, s, p); err != nil {
			return nil, err
		}
		if f.datasetVersion != 0 {
			version = f.datasetVersion
		}
	}
	if version == 0 {
		d, err := store.GetDataset(ctx, name)
		if err != nil {
			return nil, notFound(err, "dataset "+name,
				"import it with: evalrun dataset import "+name+" FILE, or set dataset.file in the suite")
		}
		version = d.LatestVersion
	}
	if p.items, err = selectSource(ctx, store, name, version, s.Selection); err != nil {
		return nil, err
	}
	if err := engine.CheckExecutions(p.items.Len(), s.Execution.Repeat); err != nil {
		return nil, fmt.Errorf("%w: %w", evalrun.ErrInvalid, err)
	}

	if s.Variants() != nil && !p.resume {
		if p.experiment, err = st.newExperiment(p, f, name, version); err != nil {
			return nil, err
		}
		ok = true
		return p, nil
	}
	p.target = s.Target()
	info := s.TargetInfo
	if s.Selection.Outputs != "" {
		if p.target, err = readOutputs(s.Selection.Outputs); err != nil {
			return nil, err
		}
		info = evalrun.TargetInfo{Kind: "outputs", Name: s.Selection.Outputs}
	}
	if !p.resume {
		cfg, err := s.RunConfig()
		if err != nil {
			return nil, err
		}
		p.record = &evalrun.Run{ID: evalrun.NewRunID(st.Now()), Name: s.Name, Dataset: name,
			DatasetVersion: version, Target: info, Config: cfg}
	}
	ok = true
	return p, nil
}

// importDataset imports the suite's dataset file, if any, and returns the
// version the run uses (0: the latest).
func (st *State) importDataset(cmd *cobra.Command, store evalrun.Store, s *suite.Suite, p *prepared) (int, error) {
	d := s.Dataset
	if d.File == "" {
		return d.Version, nil
	}
	v, created, err := dataset.Import(cmd.Context(), store, d.Name, d.File)
	if err != nil {
		return 0, err
	}
	file := displayPath(d.File)
	if created {
		p.datasetNote = fmt.Sprintf("dataset %s: imported %s as version %d (%d items: %d added, %d changed, %d removed)",
			d.Name, file, v.Version, v.ItemCount, v.Added, v.Changed, v.Removed)
	} else {
		p.datasetNote = fmt.Sprintf("dataset %s: %s unchanged, version %d", d.Name, file, v.Version)
	}
	if d.Version != 0 {
		return d.Version, nil
	}
	return v.Version, nil
}

// selectSource counts the selection's items of the version (a streamed
// pass over its pages) and returns a source that streams them to the
// engine: the run holds only the items in flight.
func selectSource(ctx context.Context, store evalrun.DatasetStore, name string, version int, sel suite.Selection) (*engine.DatasetSource, error) {
	src, err := engine.NewDatasetSource(ctx, store, name, version, engine.Selection{Tags: sel.Tags, Limit: sel.Limit})
	if err != nil {
		return nil, datasetNotFound(err, name, version)
	}
	if src.Len() == 0 {
		return nil, emptySelection(name, version, sel, src.Scanned())
	}
	return src, nil
}

// datasetNotFound says what to do when a dataset version is not found.
func datasetNotFound(err error, name string, version int) error {
	return notFound(err, fmt.Sprintf("dataset %s version %d", name, version), "evalrun dataset versions "+name+" lists its versions")
}

// emptySelection is the error of a selection keeping no item of the
// scanned items of a dataset version.
func emptySelection(name string, version int, sel suite.Selection, scanned int) error {
	if len(sel.Tags) > 0 {
		return invalidf("no item of dataset %s v%d (%d items) has a tag among %s", name, version, scanned, strings.Join(sel.Tags, ", "))
	}
	return invalidf("dataset %s v%d has no items", name, version)
}

// selectItems is selectSource's items held in memory, for what needs them
// all at once (a dry run's estimates).
func selectItems(ctx context.Context, store evalrun.DatasetStore, name string, version int, sel suite.Selection) ([]*evalrun.Item, error) {
	src, err := selectSource(ctx, store, name, version, sel)
	if err != nil {
		return nil, err
	}
	items := make([]*evalrun.Item, 0, src.Len())
	for it, err := range src.Items(ctx) {
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	return items, nil
}

// notFound adds what to do to a not-found error; other errors pass.
func notFound(err error, what, todo string) error {
	if errors.Is(err, evalrun.ErrNotFound) {
		return &notFoundError{msg: fmt.Sprintf("%s not found (%s)", what, todo)}
	}
	return err
}

// runNotFound is notFound for the run id, saying so when id is an
// experiment's (the ids look alike, and both are printed when an
// experiment starts).
func runNotFound(ctx context.Context, store evalrun.RunStore, err error, id string) error {
	if errors.Is(err, evalrun.ErrNotFound) {
		if exp, xerr := evalrun.GetExperiment(ctx, store, id); xerr == nil && len(exp.Runs) > 0 {
			return &notFoundError{msg: fmt.Sprintf("run %s not found: %s is an experiment: evalrun runs list --experiment %s lists its runs, "+
				"evalrun report --experiment %s reports it", id, id, id, id)}
		}
	}
	return notFound(err, "run "+id, "evalrun runs list shows the runs")
}

// experimentNotFound is notFound for the experiment id, saying so when id
// is a run's.
func experimentNotFound(ctx context.Context, store evalrun.RunStore, err error, id string) error {
	if errors.Is(err, evalrun.ErrNotFound) {
		if run, rerr := store.GetRun(ctx, id); rerr == nil {
			if run.Experiment != "" {
				return &notFoundError{msg: fmt.Sprintf("experiment %s not found: %s is a run of experiment %s: evalrun report --experiment %s "+
					"reports the experiment, evalrun report %s this run", id, id, run.Experiment, run.Experiment, id)}
			}
			return &notFoundError{msg: fmt.Sprintf("experiment %s not found: %s is a run, of no experiment: evalrun report %s reports it", id, id, id)}
		}
	}
	return notFound(err, "experiment "+id, "evalrun runs list shows the runs and the experiments they belong to")
}

// notFoundError is a message for people that matches evalrun.ErrNotFound.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }
func (e *notFoundError) Unwrap() error { return evalrun.ErrNotFound }

// modelDeps returns the scorer dependencies of the model-backed kinds.
// Until package openai lands they are unset, and llm_judge and
// embedding_similarity report that no model provider is configured.
func modelDeps() scorer.Deps { return scorer.Deps{} }

// displayPath returns path relative to the working directory when it is
// inside it, for messages.
func displayPath(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}
